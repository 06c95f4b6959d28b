"""Tests for training/sources/pack_folder.py: compact copies of line folders and PAGE/ALTO pages, mixed sources."""

from __future__ import annotations

import pytest
from PIL import Image

from tests.data.layout_pages import write_page_folder
from text_recognizer.data.folder import read_labels
from training.sources.pack_folder import pack_folder


def line_folder(folder, texts):
    folder.mkdir(parents=True)
    rows = ["file\ttext"]
    for i, text in enumerate(texts):
        Image.new("L", (120 + 10 * i, 64), 255).save(folder / f"l{i}.png")
        rows.append(f"l{i}.png\t{text}")
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_packs_lines_to_one_height_and_16_grey_levels(tmp_path):
    src = line_folder(tmp_path / "src", ["a b", "c \"d", "e"])
    assert pack_folder(src, tmp_path / "dst", height=40) == 3
    records = read_labels(tmp_path / "dst")
    assert [r.text for r in records] == ["a b", "c \"d", "e"]
    with Image.open(records[1].path) as image:
        assert image.size == (81, 40) and image.mode == "P"  # 130 x 64 -> 81 x 40


def test_every_prefix_and_append_mix_two_sources(tmp_path):
    first = line_folder(tmp_path / "one", ["a", "b", "c", "d"])
    second = line_folder(tmp_path / "two", ["x", "y"])
    assert pack_folder(first, tmp_path / "mix", 40, every=2, prefix="one_") == 2
    assert pack_folder(second, tmp_path / "mix", 40, prefix="two_", append=True) == 2
    records = read_labels(tmp_path / "mix")
    assert [(r.path.name, r.text) for r in records] == [
        ("one_l0.png", "a"), ("one_l2.png", "c"), ("two_l0.png", "x"), ("two_l1.png", "y")]
    with pytest.raises(ValueError, match="--prefix"):
        pack_folder(second, tmp_path / "mix", 40, prefix="two_", append=True)
    with pytest.raises(ValueError, match="--every"):
        pack_folder(second, tmp_path / "mix", 40, every=0)


def test_layout_folder_lines_are_cut_and_labels_normalised(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "cache"))
    pages = tmp_path / "pages"
    drawn = write_page_folder(pages)
    xml = pages / "page1.xml"
    xml.write_text(xml.read_text(encoding="utf-8").replace("seven cats", "l\u2019\u00e9t\u00e9 &gt;x&lt;"),
                   encoding="utf-8")
    assert pack_folder(pages, tmp_path / "packed", 40) == len(drawn)
    records = read_labels(tmp_path / "packed")
    assert records[1].text == "l'\u00e9t\u00e9 #"
    for record in records:
        with Image.open(record.path) as image:
            assert image.height == 40
