"""Vectorisation of region and core maps: one line per core, word gaps bridged, touching regions split."""

from __future__ import annotations

import numpy as np

from text_recognizer.segmentation.vectorize import vectorize


def maps(lines, size=(120, 300), gaps=()):
    """Region and core maps with a band per ``(baseline_y, x0, x1)``: region 20 px above to 10 px below the
    baseline, core 6 px above it; ``gaps`` (x0, x1) are cut out of every core (spaces between words)."""
    region, core = np.zeros(size, np.float32), np.zeros(size, np.float32)
    for y, x0, x1 in lines:
        region[y - 20:y + 10, x0:x1] = 0.9
        core[y - 6:y, x0:x1] = 0.9
    for x0, x1 in gaps:
        core[:, x0:x1] = 0
    return region, core


def test_one_line_per_core_with_its_baseline():
    region, core = maps([(30, 10, 280), (56, 10, 200), (82, 40, 280)])  # regions overlap (36..40, 62..66)
    found = sorted(vectorize(region, core), key=lambda line: line[1][0][1])
    assert len(found) == 3
    for (polygon, baseline), (y, x0, x1) in zip(found, [(30, 10, 280), (56, 10, 200), (82, 40, 280)]):
        assert all(abs(by - y) <= 1 for _, by in baseline)
        assert abs(baseline[0][0] - x0) <= 1 and abs(baseline[-1][0] - x1) <= 1
        ys = [p[1] for p in polygon]
        assert min(ys) >= y - 21 and max(ys) <= y + 11


def test_word_gaps_do_not_split_a_line_and_specks_are_dropped():
    region, core = maps([(40, 10, 280)], gaps=[(60, 70), (150, 165)])
    core[100:104, 100:105] = 0.9  # a speck: too short to be a line
    found = vectorize(region, core)
    assert len(found) == 1
    assert found[0][1][0][0] <= 11 and found[0][1][-1][0] >= 279


def test_nothing_found_on_empty_maps():
    empty = np.zeros((50, 50), np.float32)
    assert vectorize(empty, empty) == []


def test_slivers_between_lines_are_dropped_and_a_short_last_line_kept():
    # Three lines, a short last one (a signature), and a thin flourish of core between the first two.
    region, core = maps([(30, 10, 280), (90, 10, 280), (150, 200, 260)], size=(170, 300))
    region[54:58, 100:160], core[54:57, 100:160] = 0.9, 0.9  # 4 px high where lines are 30, yet long enough
    found = sorted(vectorize(region, core), key=lambda line: line[1][0][1])
    assert [round(line[1][0][1]) for line in found] == [30, 90, 150]


def test_show_through_is_dropped_and_a_pale_page_keeps_its_lines():
    # Three written lines and, between them, a fourth as long and as tall but far paler: the other side's ink.
    lines = [(30, 10, 280), (70, 10, 280), (110, 10, 280), (150, 10, 280)]
    region, core = maps(lines, size=(170, 300))
    darkness = np.zeros(region.shape, np.float32)
    for y, x0, x1 in lines:
        darkness[y - 20:y + 10, x0:x1] = 0.8
    darkness[90:120, 10:280] = 0.25  # the line at 110 shows through from the back
    found = sorted(vectorize(region, core, darkness=darkness), key=lambda line: line[1][0][1])
    assert [round(line[1][0][1]) for line in found] == [30, 70, 150]
    assert len(vectorize(region, core)) == 4  # without the darkness nothing is judged
    # a page written all in pale ink (or pencil) loses nothing: the measure is relative to the page
    assert len(vectorize(region, core, darkness=np.where(darkness > 0, 0.25, 0).astype(np.float32))) == 4
