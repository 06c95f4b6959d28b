"""Marks that are not text lines; here the printed letterhead: ink above the first written line, no line of
its own, and its share of the drawn pages."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.segmentation.synthetic.drawn import render
from text_recognizer.segmentation.synthetic.marks import letterhead
from text_recognizer.segmentation.synthetic.style import draw_style


@pytest.mark.parametrize("seed", range(4))
def test_a_letterhead_prints_above_the_lines_and_is_no_line(lines, seed):
    fixed = dict(stamp="", holes=0, jpeg=0, bleed=0.0, top=300.0, single_line=False)
    plain, ink = render(lines, seed, letterhead=False, **fixed)
    printed, printed_ink = render(lines, seed, letterhead=True, **fixed)
    # the same lines, and the letterhead is paper ink, not line ink
    assert printed.lines == plain.lines and np.array_equal(ink, printed_ink)
    band = slice(0, 250)
    darker = np.asarray(plain.image.convert("L"), np.float64)[band] - np.asarray(printed.image.convert("L"),
                                                                                 np.float64)[band]
    assert (darker > 60).sum() > 200  # printed letters in the band
    assert min(y for line in printed.lines for _, y in line.polygon) > 250  # and no line there


def test_letterhead_band_stays_above_the_first_line():
    style = draw_style(np.random.default_rng(0), 1000)
    box, cover, _ = letterhead(style, np.random.default_rng(1))
    assert box[1] == 0 and box[3] < style.top and cover.size == (box[2] - box[0], box[3] - box[1])


def test_letterheads_only_when_asked_and_the_other_features_unchanged():
    plain = [draw_style(np.random.default_rng(seed)) for seed in range(400)]
    asked = [draw_style(np.random.default_rng(seed), letterheads=0.3) for seed in range(400)]
    assert not any(style.letterhead for style in plain)
    headed = [style for style in asked if style.letterhead]
    assert 0.18 < len(headed) / len(asked) < 0.35  # a page too full for a band keeps none
    assert all(style.top >= 0.1 * style.height - 1e-6 for style in headed)
    for before, after in zip(plain, asked):  # a letterhead changes the top margin, nothing else
        assert dataclasses.replace(after, top=before.top, letterhead=False) == before
