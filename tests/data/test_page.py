"""Tests for text_recognizer.data.page: PAGE/ALTO folders as datasets, with cut lines cached and bad
lines reported; and the hook in training's dataset builder and evaluation."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from tests.data.layout_pages import PAGE_2013, page_xml, write_page_folder
from text_recognizer.codec import Codec
from text_recognizer.data.checks import DataCheckError
from text_recognizer.data.page import (
    MANIFEST,
    check_layout_folder,
    crossed_out_as_hash,
    cut_layout_folder,
    is_layout_folder,
)
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.line_cnn import WindowGeometry
from training.loop.config import DataConfig
from training.loop.data import build_datasets

BROKEN_LINES = [
    {"id": "empty", "text": "", "points": "600,40 900,40 900,100 600,100"},
    {"id": "notext", "text": None, "points": "600,40 900,40 900,100 600,100"},
    {"id": "flat", "text": "flat", "points": "600,40 900,40 950,40"},
    {"id": "outside", "text": "far", "points": "2000,40 2100,40 2100,90"},
    {"id": "odd", "text": "odd", "points": "600,40 900,40 900"},
]


@pytest.fixture()
def pages(tmp_path):
    """page1: PAGE 2019 with 3 good + 5 broken lines; page2: ALTO v4; page3: PAGE 2013 whose image is
    missing; wrong.xml: unknown namespace; notes.txt ignored."""
    folder = tmp_path / "pages"
    write_page_folder(folder, "page", extra_lines=BROKEN_LINES)
    write_page_folder(folder, "alto", stem="page2")
    write_page_folder(folder, "page", namespace=PAGE_2013, stem="page3")
    (folder / "page3.png").unlink()
    (folder / "wrong.xml").write_text(page_xml("page1.png", (10, 10), [], namespace="urn:other"))
    (folder / "notes.txt").write_text("not a page")
    return folder


def test_cut_lines_records_and_problems(pages, tmp_path):
    cut = cut_layout_folder(pages, cache_root=tmp_path / "cache")
    assert [r.text for r in cut.records] == ["hello world", "seven cats", "move the tables"] * 2
    assert all(r.path.is_file() and r.path.suffix == ".png" for r in cut.records)
    empty = dict(cut.empty)
    assert set(empty) == {f"{pages / 'page1.xml'}#empty", f"{pages / 'page1.xml'}#notext"}
    unreadable = dict(cut.unreadable)
    assert "neither PAGE-XML" in unreadable[str(pages / "wrong.xml")]
    assert "no area" in unreadable[f"{pages / 'page1.xml'}#flat"]
    assert "outside the 1000x420 image" in unreadable[f"{pages / 'page1.xml'}#outside"]
    assert "odd count" in unreadable[f"{pages / 'page1.xml'}#odd"]
    for i in range(3):
        assert "page image missing" in unreadable[f"{pages / 'page3.xml'}#l{i}"]
    assert (cut.pages, cut.cached_pages) == (3, 0)


def test_cut_lines_are_masked_levelled_line_images(pages, tmp_path):
    cut = cut_layout_folder(pages, cache_root=tmp_path / "cache")
    images = [np.asarray(Image.open(r.path)) for r in cut.records[:3]]
    for image in images:
        assert image.dtype == np.uint8 and 60 <= image.shape[0] <= 75  # one 64 px line, not the page
        assert (image < 128).mean() > 0.02  # has ink
    # the sloping third line was levelled: about as high as the level ones, not 64 + 26 px
    assert images[2].shape[0] <= images[0].shape[0] + 4


def test_cache_reuse_and_invalidation(pages, tmp_path):
    cache = tmp_path / "cache"
    first = cut_layout_folder(pages, cache_root=cache)
    again = cut_layout_folder(pages, cache_root=cache)
    assert again.cached_pages == 2 and [r.path for r in again.records] == [r.path for r in first.records]
    assert len(list(cache.glob(f"*/{MANIFEST}"))) == 2
    xml = pages / "page2.xml"
    xml.write_text(xml.read_text().replace('CONTENT="cats"', 'CONTENT="dogs"'))
    changed = cut_layout_folder(pages, cache_root=cache)
    assert changed.cached_pages == 1 and "seven dogs" in [r.text for r in changed.records]
    manifest = json.loads(next(cache.glob(f"*/{MANIFEST}")).read_text())
    assert {"xml", "image", "lines", "problems"} <= set(manifest)


def test_check_report_and_error_policy(pages, tmp_path):
    geometry = WindowGeometry(16, 4)
    report = check_layout_folder(pages, Codec(), geometry, 40, cache_root=tmp_path / "cache")
    assert len(report.kept) == 6 and len(report.empty_labels) == 2 and len(report.unreadable) == 7
    assert "empty label: 2" in report.summary()
    with pytest.raises(DataCheckError, match="page1.xml#flat"):
        check_layout_folder(pages, Codec(), geometry, 40, policy="error", cache_root=tmp_path / "cache")
    with pytest.raises(ValueError, match="policy must be one of"):
        check_layout_folder(pages, Codec(), geometry, 40, policy="ignore", cache_root=tmp_path / "cache")


def test_unicode_is_normalised_and_unknown_characters_reported(tmp_path):
    folder = tmp_path / "pages"
    write_page_folder(folder)
    xml = folder / "page1.xml"
    xml.write_text(xml.read_text(encoding="utf-8").replace("seven cats", "sieben Ka\u0308tzchen"), encoding="utf-8")
    cut = cut_layout_folder(folder, cache_root=tmp_path / "cache")
    assert cut.records[1].text == "sieben K\u00e4tzchen"  # NFC: one code point
    report = check_layout_folder(folder, Codec(), WindowGeometry(16, 4), 40, cache_root=tmp_path / "cache")
    assert len(report.kept) == 2 and "'ä'" in report.unknown_characters[0][1]


def test_crossed_out_marks_become_hash_and_apostrophes_fold(tmp_path):
    folder = tmp_path / "pages"
    write_page_folder(folder)
    xml = folder / "page1.xml"
    xml.write_text(xml.read_text(encoding="utf-8").replace("seven cats", "l’été &gt;mai&lt; mai &gt;&lt;"),
                   encoding="utf-8")
    cut = cut_layout_folder(folder, cache_root=tmp_path / "cache")
    assert cut.records[1].text == "l'été # mai #"  # IAM's mark for a crossed-out word; one apostrophe
    assert crossed_out_as_hash("Sari>e<, né") == "Sari#, né"
    assert crossed_out_as_hash("a > b and c < d") == "a # d"  # the rule is blunt: documented in docs/alphabet.md
    assert crossed_out_as_hash("x < y > z") == "x < y > z"


def test_folder_detection_and_empty_folder(tmp_path):
    folder = tmp_path / "pages"
    write_page_folder(folder)
    assert is_layout_folder(folder)
    (folder / "labels.tsv").write_text("file\ttext\n")
    assert not is_layout_folder(folder)  # a labels.tsv makes it a line folder
    assert not is_layout_folder(tmp_path / "nothing")
    with pytest.raises(ValueError, match="does not exist"):
        cut_layout_folder(tmp_path / "nothing", cache_root=tmp_path / "cache")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no PAGE or ALTO files"):
        cut_layout_folder(tmp_path / "empty", cache_root=tmp_path / "cache")


def test_training_dataset_builder_reads_layout_folders(pages, tmp_path, monkeypatch):
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "data-cache"))
    shutil.copytree(pages, tmp_path / "val")
    model = ModelConfig(height=32, num_classes=Codec().num_classes)
    datasets = build_datasets(DataConfig(data=(str(pages),), val_data=(str(tmp_path / "val"),), augment=False),
                              Codec(), model, seed=0)
    assert len(datasets.train) == 6 and len(datasets.val) == 6
    sample = datasets.train[0]
    assert sample.text == "hello world" and sample.image.shape[1] == 32
    assert datasets.reports[str(pages)].to_dict()["unreadable_image"] == 7
    assert (tmp_path / "data-cache" / "page_lines").is_dir()
    with pytest.raises(DataCheckError):
        build_datasets(DataConfig(data=(str(pages),), val_data=(str(tmp_path / "val"),), bad_samples="error"),
                       Codec(), model, seed=0)


def test_evaluate_reads_layout_folders(tmp_path, monkeypatch, capsys):
    from training.evaluate import main as evaluate_main

    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "data-cache"))
    folder = tmp_path / "pages"
    write_page_folder(folder, extra_lines=BROKEN_LINES[:1])
    assert evaluate_main(["--data", str(folder), "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["n"] == 3 and result["cer"] < 0.3  # the bundled model reads the drawn lines
    assert "page1.xml#empty" in err
