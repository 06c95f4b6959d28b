"""The training maps drawn from true lines: the region fills the polygon, the core sits on the baseline."""

from __future__ import annotations

import numpy as np

from text_recognizer.segmentation.targets import CORE_SHARE, core_polygon, line_height, rasterize


def box(left, top, right, bottom):
    return [(left, top), (right, top), (right, bottom), (left, bottom)]


def test_core_is_a_band_above_the_baseline():
    polygon, baseline = box(10, 20, 110, 60), [(10, 50), (110, 50)]
    assert line_height(polygon, baseline) == 30  # the top (20) is 30 px above the baseline (50)
    maps = rasterize([(polygon, baseline)], (128, 80))
    region, core = maps
    assert region[20:60, 10:110].all() and region.sum() <= 41 * 101
    rows = np.flatnonzero(core.any(1))
    assert rows[-1] <= 50 and rows[0] >= 50 - CORE_SHARE * 30 - 1
    assert not core[:, :9].any() and not core[:, 112:].any()


def test_scale_and_lines_without_baseline():
    polygon, baseline = box(10, 20, 110, 60), [(10, 50), (110, 50)]
    half = rasterize([(polygon, baseline), (box(10, 70, 110, 90), [])], (64, 50), scale=0.5)
    assert half[0, 10:30, 5:55].all()  # the first line, at half size
    assert half[0, 35:45, 5:55].all()  # the line without a baseline: region...
    assert not half[1, 33:, :].any()  # ...but no core
    assert core_polygon(polygon, baseline, 0.5)[0] == (5.0, 25.0)
