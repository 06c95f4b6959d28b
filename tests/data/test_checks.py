"""Tests for text_recognizer.data.checks: unknown characters, unreadable images, CTC feasibility."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from text_recognizer.codec import Codec
from text_recognizer.data.checks import DataCheckError, DataReport, check_records
from text_recognizer.data.folder import LineRecord, read_labels
from text_recognizer.data.synthetic import render_line
from text_recognizer.models.line_cnn import WindowGeometry

GEOMETRY = WindowGeometry(16, 4)
HEIGHT = 32


def line(folder: Path, name: str, text: str, seed: int = 0) -> LineRecord:
    path = folder / name
    render_line(text or "x", np.random.default_rng(seed), height=HEIGHT).save(path)
    return LineRecord(path, text)


def blank(folder: Path, name: str, size: tuple[int, int], text: str) -> LineRecord:
    path = folder / name
    Image.new("L", size, 255).save(path)
    return LineRecord(path, text)


def test_good_records_are_kept(tmp_path: Path) -> None:
    records = [line(tmp_path, f"{i}.png", t, seed=i) for i, t in enumerate(["Hello", "it's a test", "1984."])]
    report = check_records(records, Codec(), GEOMETRY, HEIGHT)
    assert report.kept == records
    assert report.num_skipped == 0
    assert report.to_dict() == {"kept": 3, "unknown_characters": 0, "unreadable_image": 0,
                                "infeasible_for_CTC": 0, "empty_label": 0}
    assert report.summary().startswith("3 samples kept, 0 with problems")


def test_unknown_characters(tmp_path: Path) -> None:
    records = [line(tmp_path, "a.png", "ok"), line(tmp_path, "b.png", "naïve")]
    report = check_records(records, Codec(), GEOMETRY, HEIGHT)
    assert report.kept == records[:1]
    assert len(report.unknown_characters) == 1
    name, reason = report.unknown_characters[0]
    assert name == str(tmp_path / "b.png")
    assert "'ï'" in reason


def test_unreadable_and_missing_images(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"not an image")
    records = [LineRecord(tmp_path / "bad.png", "hello"), LineRecord(tmp_path / "gone.png", "hello"),
               line(tmp_path, "good.png", "hello")]
    report = check_records(records, Codec(), GEOMETRY, HEIGHT)
    assert report.kept == records[2:]
    assert [name for name, _ in report.unreadable] == [str(tmp_path / "bad.png"), str(tmp_path / "gone.png")]
    assert "not a readable image" in report.unreadable[0][1]
    assert "not found" in report.unreadable[1][1]


def test_empty_label(tmp_path: Path) -> None:
    record = blank(tmp_path, "e.png", (200, 32), "")
    report = check_records([record], Codec(), GEOMETRY, HEIGHT)
    assert report.kept == [] and report.empty_labels == [(str(record.path), "label is empty")]
    allowed = check_records([record], Codec(), GEOMETRY, HEIGHT, allow_empty=True)
    assert allowed.kept == [record] and allowed.num_skipped == 0


def test_infeasible_narrow_image_with_long_label(tmp_path: Path) -> None:
    # 24 px at height 32 -> 3 frames; "hello" needs 6
    narrow = blank(tmp_path, "narrow.png", (24, 32), "hello")
    report = check_records([narrow], Codec(), GEOMETRY, HEIGHT)
    assert report.kept == []
    (name, reason), = report.infeasible
    assert name == str(narrow.path)
    assert "3 frames" in reason and "needing 6" in reason and "'hello'" in reason


def test_feasibility_edge_uses_scaled_width(tmp_path: Path) -> None:
    # "aa" needs 3 frames = 24 px at height 32; the images are twice as high, so twice as wide
    at_edge = blank(tmp_path, "edge.png", (48, 64), "aa")
    below = blank(tmp_path, "below.png", (46, 64), "aa")
    report = check_records([at_edge, below], Codec(), GEOMETRY, HEIGHT)
    assert report.kept == [at_edge]
    assert [name for name, _ in report.infeasible] == [str(below.path)]


def test_each_record_reported_once_in_order_of_checks(tmp_path: Path) -> None:
    # unknown characters are reported before the image is even looked at
    (tmp_path / "bad.png").write_bytes(b"junk")
    record = LineRecord(tmp_path / "bad.png", "€")
    report = check_records([record], Codec(), GEOMETRY, HEIGHT)
    assert len(report.unknown_characters) == 1 and report.unreadable == [] and report.num_skipped == 1


def mixed(tmp_path: Path) -> list[LineRecord]:
    (tmp_path / "broken.png").write_bytes(b"junk")
    return [
        line(tmp_path, "fine.png", "fine"),
        line(tmp_path, "euro.png", "5 €"),
        LineRecord(tmp_path / "broken.png", "text"),
        blank(tmp_path, "tiny.png", (10, 32), "a long label"),
        blank(tmp_path, "empty.png", (100, 32), ""),
    ]


def test_policy_skip(tmp_path: Path) -> None:
    records = mixed(tmp_path)
    report = check_records(records, Codec(), GEOMETRY, HEIGHT, policy="skip")
    assert report.kept == records[:1]
    assert report.num_skipped == 4
    assert report.to_dict() == {"kept": 1, "unknown_characters": 1, "unreadable_image": 1,
                                "infeasible_for_CTC": 1, "empty_label": 1}
    summary = report.summary()
    for name in ("euro.png", "broken.png", "tiny.png", "empty.png"):
        assert name in summary
    assert "fine.png" not in summary


def test_policy_error_lists_files(tmp_path: Path) -> None:
    records = mixed(tmp_path)
    with pytest.raises(DataCheckError) as info:
        check_records(records, Codec(), GEOMETRY, HEIGHT, policy="error")
    message = str(info.value)
    for name in ("euro.png", "broken.png", "tiny.png", "empty.png"):
        assert str(tmp_path / name) in message
    assert "unknown characters: 1" in message and "infeasible for CTC: 1" in message
    assert isinstance(info.value, ValueError)


def test_policy_error_passes_clean_data(tmp_path: Path) -> None:
    records = [line(tmp_path, "a.png", "clean")]
    assert check_records(records, Codec(), GEOMETRY, HEIGHT, policy="error").kept == records


def test_unknown_policy(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="policy must be one of"):
        check_records([], Codec(), GEOMETRY, HEIGHT, policy="warn")


def test_summary_limits_examples() -> None:
    report = DataReport(empty_labels=[(f"{i}.png", "label is empty") for i in range(15)])
    summary = report.summary(limit=3)
    assert "empty label: 15" in summary
    assert "2.png" in summary and "3.png" not in summary
    assert "... and 12 more" in summary


def test_checks_records_from_a_labels_file(tmp_path: Path) -> None:
    line(tmp_path, "a.png", '"Yes," she said')
    blank(tmp_path, "b.png", (12, 32), "too long for this")
    (tmp_path / "labels.tsv").write_text('file\ttext\na.png\t"Yes," she said\nb.png\ttoo long for this\n')
    report = check_records(read_labels(tmp_path), Codec(), GEOMETRY, HEIGHT)
    assert [r.text for r in report.kept] == ['"Yes," she said']
    assert [name for name, _ in report.infeasible] == [str(tmp_path / "b.png")]
