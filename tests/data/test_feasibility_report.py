"""The feasibility report before training: a dataset with known bad samples is reported as a table,
the bad samples are skipped with a count (``--bad-samples skip``) or stop the run with the list (``error``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from text_recognizer.codec import Codec
from text_recognizer.data.checks import DataCheckError, check_records, report_table
from text_recognizer.data.folder import read_labels
from text_recognizer.data.synthetic import render_line
from text_recognizer.models.line_cnn import WindowGeometry
from training.loop.trainer import fit

from ..training.helpers import tiny_config

HEIGHT = 32
GEOMETRY = WindowGeometry(16, 4)  # the tiny model's windows: T = (W - 16) // 4 + 1


def _dataset(folder: Path) -> dict[str, str]:
    """Six good lines and one of each problem; returns file -> problem for the bad ones."""
    folder.mkdir()
    rows = []
    for i, text in enumerate(["hello", "a line", "more text", "ok then", "good", "fine"]):
        render_line(text, np.random.default_rng(i), height=HEIGHT).save(folder / f"good{i}.png")
        rows.append((f"good{i}.png", text))
    render_line("x", np.random.default_rng(9), height=HEIGHT).save(folder / "unknown.png")
    rows.append(("unknown.png", "naïve"))  # 'ï' is not in the character set
    Image.new("L", (60, HEIGHT), 255).save(folder / "empty.png")
    rows.append(("empty.png", ""))  # empty label
    (folder / "broken.png").write_bytes(b"not a png")
    rows.append(("broken.png", "text"))  # unreadable image
    # 28 px wide: T = (28 - 16) // 4 + 1 = 4 frames. "aab" needs 3 + 1 repeat = 4 (fits exactly);
    # "aabb" needs 4 + 2 repeats = 6 > 4: infeasible because of the blanks its repeats need
    Image.new("L", (28, HEIGHT), 255).save(folder / "narrow.png")
    rows.append(("narrow.png", "aabb"))
    Image.new("L", (28, HEIGHT), 255).save(folder / "tight.png")
    rows.append(("tight.png", "aab"))  # exactly feasible: kept
    (folder / "labels.tsv").write_text("file\ttext\n" + "".join(f"{f}\t{t}\n" for f, t in rows), encoding="utf-8")
    return {
        "unknown.png": "unknown characters",
        "empty.png": "empty label",
        "broken.png": "unreadable image",
        "narrow.png": "infeasible for CTC",
    }


def test_report_table_lists_counts_and_examples(tmp_path):
    bad = _dataset(tmp_path / "lines")
    report = check_records(read_labels(tmp_path / "lines"), Codec(), GEOMETRY, HEIGHT)
    assert len(report.kept) == 7 and report.num_skipped == 4
    for file, problem in bad.items():
        assert [name for name, _ in report.problems[problem]] == [str(tmp_path / "lines" / file)]
    assert "needing 6" in report.infeasible[0][1]  # 4 characters + 2 repeats
    table = report_table({"train": report}).splitlines()
    assert table[0].split() == [
        "dataset",
        "kept",
        "unknown",
        "characters",
        "unreadable",
        "image",
        "infeasible",
        "for",
        "CTC",
        "empty",
        "label",
    ]
    assert table[2].split() == ["train", "7", "1", "1", "1", "1"]
    assert any(line.startswith("train: infeasible for CTC:") for line in table)


def test_training_skips_bad_samples_with_a_count(tmp_path, capsys):
    folder = tmp_path / "lines"
    _dataset(folder)
    config = tiny_config(
        tmp_path / "run",
        data={"data": (str(folder),), "val_data": (str(folder),), "augment": False},
        optim={"max_steps": 1},
    )
    summary = fit(config)
    out = capsys.readouterr().out
    assert "data check (--bad-samples skip):" in out and "broken.png" in out
    assert summary["steps"] == 1
    expected = {"kept": 7, "unknown_characters": 1, "unreadable_image": 1, "infeasible_for_CTC": 1, "empty_label": 1}
    assert summary["data_checks"] == {str(folder): expected, f"val:{folder}": expected}
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["data_checks"][str(folder)] == expected


def test_training_stops_before_it_starts_with_the_list(tmp_path):
    folder = tmp_path / "lines"
    bad = _dataset(folder)
    config = tiny_config(
        tmp_path / "run", data={"data": (str(folder),), "val_data": (str(folder),), "bad_samples": "error"}
    )
    with pytest.raises(DataCheckError) as error:
        fit(config)
    for file in bad:
        assert str(folder / file) in str(error.value)
    assert not (tmp_path / "run" / "last.pt").exists()
