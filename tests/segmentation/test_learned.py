"""The bundled learned segmenter on pages composed from real handwritten lines (the fixtures): every known
line found once, in reading order; empty, tiny and huge pages; its weights file."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from tests.segmentation.test_classical import FIXTURES, compose_page
from text_recognizer.segmentation.learned import (
    WORK_SIDE,
    LearnedSegmenter,
    default_segmenter_path,
    save_segmenter,
    working_page,
)
from text_recognizer.segmentation.scoring import detection_scores, match_lines
from text_recognizer.segmentation.unet import LineUNet, UNetConfig


@pytest.fixture(scope="module")
def bundled() -> LearnedSegmenter:
    return LearnedSegmenter.load()


def test_the_package_holds_the_weights_with_their_card():
    path = default_segmenter_path()
    assert path.is_file() and path.stat().st_size <= 20 * 2**20
    card = LearnedSegmenter.load(path).card
    assert card["licence"] and card["trained_on"]


@pytest.mark.parametrize("angle", [0.0, 3.0])
def test_every_line_of_a_composed_page_is_found_once(bundled, angle):
    names = sorted(p.name for p in FIXTURES.glob("line_*.png"))
    page, truth = compose_page(names, angle)
    found = bundled(page)
    matching = match_lines([line.polygon for line in found], truth, page.size, threshold=0.3)
    scores = detection_scores(len(matching.pairs), len(found), len(truth))
    assert scores["recall"] == 1.0 and scores["precision"] == 1.0, scores
    tops = [min(p[1] for p in line.polygon) for line in found]
    assert tops == sorted(tops)  # top to bottom
    for line in found:  # the baseline lies inside its line's box
        left, top, right, bottom = line.box
        assert all(left - 1 <= x <= right + 1 and top <= y <= bottom + 1 for x, y in line.baseline)


def test_a_line_image_given_as_a_page_is_one_line(bundled):
    line = Image.open(FIXTURES / "line_03.png").convert("L")
    page = Image.new("L", (line.width + 40, line.height + 40), 255)
    page.paste(line, (20, 20))
    found = bundled(page)
    assert len(found) == 1
    ink = np.flatnonzero((np.asarray(page) < 128).any(0))  # the ink's columns
    left, _, right, _ = found[0].box
    assert left <= ink[0] + 5 and right >= ink[-1] - 5


def test_pages_without_writing_have_no_lines(bundled):
    assert bundled(Image.new("RGB", (800, 1000), (240, 236, 225))) == []
    ys, xs = np.mgrid[0:1000, 0:800]
    lit = (200 + 40 * np.sin(xs / 300) * np.cos(ys / 400)).astype(np.uint8)  # uneven light, no writing
    assert bundled(Image.fromarray(lit)) == []
    assert bundled(Image.new("L", (1, 1), 255)) == []
    assert bundled(Image.new("L", (3000, 5), 255)) == []


def test_a_huge_page_is_shrunk_before_it_is_made_grey():
    page = Image.new("RGB", (12000, 9000), (250, 250, 250))
    gray, size = working_page(page)
    assert size == (12000, 9000)
    assert gray.shape == (768, WORK_SIDE) and gray.dtype == np.float32


def test_weights_round_trip_and_foreign_files(tmp_path):
    model = LineUNet(UNetConfig((4, 8)))
    path = save_segmenter(tmp_path / "seg.pt", model, work_side=512, card={"licence": "test"})
    loaded = LearnedSegmenter.load(path)
    assert loaded.work_side == 512 and loaded.card == {"licence": "test"}
    for key, value in model.state_dict().items():
        assert torch.equal(value, loaded.model.state_dict()[key])
    torch.save({"something": "else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a segmenter file"):
        LearnedSegmenter.load(tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError):
        LearnedSegmenter.load(tmp_path / "missing.pt")
