"""Tests for text_recognizer.data.linecut: polygon masks, deskewing by the baseline, broken polygons."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from text_recognizer.data.linecut import baseline_angle, cut_line, polygon_area, polygon_problem


def test_outside_the_polygon_becomes_white_inside_keeps_ink():
    page = Image.new("L", (200, 100), 255)
    draw = ImageDraw.Draw(page)
    draw.rectangle((20, 40, 60, 60), fill=0)  # inside the triangle's lower-left part
    draw.rectangle((150, 10, 170, 25), fill=0)  # inside the bounding box, outside the triangle
    triangle = [(10, 5), (10, 90), (190, 90)]
    cut = np.asarray(cut_line(page, triangle))
    assert cut.shape == (86, 181)  # the bounding box: rows 5..90, columns 10..190, both ends included
    assert cut[50 - 5, 40 - 10] == 0  # ink inside is kept
    assert (cut[10 - 5 : 25 - 5, 150 - 10 : 170 - 10] == 255).all()  # the blob outside is painted white


def test_deskew_levels_a_sloping_bar():
    page = Image.new("L", (400, 200), 255)
    angle = 6.0
    slope = np.tan(np.radians(angle))
    ImageDraw.Draw(page).line([(30, 60), (370, 60 + 340 * slope)], fill=0, width=6)
    polygon = [(20, 40), (380, 40 + 360 * slope), (380, 80 + 360 * slope), (20, 80)]
    baseline = [(30, 60), (370, 60 + 340 * slope)]
    assert baseline_angle(baseline) == pytest.approx(angle, abs=0.01)

    def ink_rows(image):
        return int(((np.asarray(image) < 128).sum(axis=1) > 0).sum())

    assert ink_rows(cut_line(page, polygon, baseline=None)) > 35  # the bar crosses ~36 rows when sloping
    assert ink_rows(cut_line(page, polygon, baseline=baseline)) <= 9  # levelled: about its 6 px width
    assert ink_rows(cut_line(page, polygon, baseline=baseline, deskew=False)) > 35


def test_flat_or_degenerate_baselines_do_not_rotate():
    assert baseline_angle(None) == 0.0
    assert baseline_angle([(5, 5)]) == 0.0
    assert baseline_angle([(5, 5), (5.5, 50)]) == 0.0  # no width: no slope to trust
    assert baseline_angle([(0, 10), (100, 10)]) == pytest.approx(0.0, abs=1e-9)
    assert baseline_angle([(0, 10), (100, 0)]) < 0  # rising to the right


@pytest.mark.parametrize("polygon, reason", [
    ([], "empty"),
    ([(1, 1), (5, 5)], "needs at least 3"),
    ([(1, 1), (5, 5), (9, 9)], "no area"),
    ([(500, 500), (600, 500), (600, 600)], "outside the 200x100 image"),
    ([(1, 1), (float("nan"), 5), (9, 1)], "not finite"),
])
def test_broken_polygons_are_named(polygon, reason):
    assert reason in polygon_problem(polygon, (200, 100))
    with pytest.raises(ValueError, match=reason):
        cut_line(Image.new("L", (200, 100), 255), polygon)


def test_polygon_partly_outside_is_clipped_and_area():
    assert polygon_area([(0, 0), (10, 0), (10, 10), (0, 10)]) == 100
    cut = cut_line(Image.new("RGB", (50, 40), "white"), [(-10, -10), (30, -10), (30, 20), (-10, 20)])
    assert cut.mode == "L" and cut.size == (31, 21)
