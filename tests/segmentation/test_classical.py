"""The classical segmenter on pages composed from the fixture lines: every known line is found, once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from text_recognizer.segmentation.classical import segment_page
from text_recognizer.segmentation.scoring import detection_scores, match_lines

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lines"


def compose_page(names: list[str], angle: float = 0.0, gap: float = 1.6) -> tuple[Image.Image, list[list]]:
    """Fixture lines pasted one under another on grey paper (then rotated by ``angle`` degrees), and
    the box of each line's ink as its true polygon."""
    lines = [Image.open(FIXTURES / name).convert("L") for name in names]
    height = max(line.height for line in lines)
    page = Image.new("L", (1400, int(len(lines) * height * gap) + 2 * height), 235)
    boxes = []
    for i, line in enumerate(lines):
        x, y = 80 + 37 * (i % 3), height + int(i * height * gap)
        page.paste(Image.fromarray(np.minimum(np.asarray(line), 235)), (x, y))
        ink = np.asarray(line) < 128
        cols, rows = np.flatnonzero(ink.any(0)), np.flatnonzero(ink.any(1))
        boxes.append([(x + cols[0], y + rows[0]), (x + cols[-1], y + rows[0]), (x + cols[-1], y + rows[-1]),
                      (x + cols[0], y + rows[-1])])
    if angle:
        centre = (page.width / 2, page.height / 2)
        page = page.rotate(angle, resample=Image.Resampling.BILINEAR, center=centre, fillcolor=235)
        theta = np.deg2rad(-angle)  # PIL rotates counter-clockwise on screen: y down
        rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        boxes = [[tuple(rotation @ (np.array(p) - centre) + centre) for p in box] for box in boxes]
    return page, boxes


@pytest.mark.parametrize("angle", [0.0, 3.0])
def test_every_line_of_a_composed_page_is_found_once(angle):
    names = sorted(p.name for p in FIXTURES.glob("line_*.png"))
    page, truth = compose_page(names, angle)
    found = segment_page(page)
    matching = match_lines([line.polygon for line in found], truth, page.size)
    scores = detection_scores(len(matching.pairs), len(found), len(truth))
    assert scores["recall"] == 1.0, scores
    assert scores["precision"] == 1.0, scores
    tops = [min(p[1] for p in line.polygon) for line in found]
    assert tops == sorted(tops)  # top to bottom


def test_pages_without_writing_have_no_lines():
    assert segment_page(Image.new("RGB", (800, 1000), (240, 236, 225))) == []
    assert segment_page(Image.new("L", (1, 1), 255)) == []
