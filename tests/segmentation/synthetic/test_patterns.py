"""Patterns that turn with the page; here the threads of woven (linen) and laid paper: a low-contrast
variation of the paper that leaves the rest of the page as it was."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.segmentation.synthetic.drawn import render
from text_recognizer.segmentation.synthetic.patterns import THREAD_SPREAD, weave
from text_recognizer.segmentation.synthetic.style import draw_style


def grey(image) -> np.ndarray:
    return np.asarray(image.convert("L"), dtype=np.float64)


@pytest.mark.parametrize(("seed", "kind", "even"), [(0, "linen", True), (1, "laid", True), (2, "linen", False),
                                                   (3, "laid", False), (4, "linen", False), (5, "laid", False)])
def test_woven_paper_adds_only_a_faint_variation(lines, seed, kind, even):
    # the same page twice, plain and woven at the strongest drawn weave (the threads are drawn last, so
    # all else is the same); the tone, ink and (unless even) light, texture and rules stay as drawn;
    # JPEG would blur the two differently
    fixed = dict(stamp="", holes=0, jpeg=0, pencil=False, opacity=1.0, weave_pitch=4.0, weave_strength=0.04)
    if even:
        fixed.update(lighting=0.0, texture=0.0, noise=0.5, grid="", margin_rule=False, bleed=0.0)
    plain_page, ink = render(lines, seed, weave="", **fixed)
    woven_page, woven_ink = render(lines, seed, weave=kind, **fixed)
    assert plain_page.lines == woven_page.lines and np.array_equal(ink, woven_ink)
    plain, woven = grey(plain_page.image), grey(woven_page.image)

    paper = np.ones_like(ink, dtype=bool)  # 3 px clear of any ink
    for dy in range(-3, 4):
        for dx in range(-3, 4):
            paper &= np.roll(ink, (dy, dx), axis=(0, 1)) == 0
    inked = ink > 200
    assert paper.mean() > 0.5 and inked.sum() > 1000
    contrast = np.median(plain[paper]) - np.median(plain[inked])
    assert contrast > 60

    difference = woven - plain
    assert (difference <= 1).all()  # the gaps between threads darken the paper, nothing else changes
    # the paper varies more (relative to its mean: the threads also darken whatever light it has) ...
    assert np.std(woven[paper]) / np.mean(woven[paper]) > np.std(plain[paper]) / np.mean(plain[paper])
    if even:
        assert np.std(woven[paper]) > np.std(plain[paper]) + 0.5
    assert 1.0 < np.std(difference[paper]) < 0.1 * contrast  # ... visibly, but faintly next to the ink
    assert np.percentile(-difference[paper], 99.9) < 0.25 * contrast
    assert abs(np.median(woven[inked]) - np.median(plain[inked])) < 0.1 * contrast  # threads under the ink

@pytest.mark.parametrize("kind", ["linen", "laid"])
def test_weave_is_a_fine_pattern_across_the_page(kind):
    style = dataclasses.replace(draw_style(np.random.default_rng(0), 1000), weave=kind, angle=0.0,
                                weave_pitch=4.0, weave_strength=0.05)
    rows, columns = (np.asarray(factor, dtype=np.float64) / 255 for factor in weave(style, np.random.default_rng(1)))
    assert rows.shape == columns.shape == (style.height, style.width)
    for factor in (rows, columns):
        assert 1 - 0.05 * (1 + THREAD_SPREAD) - 0.01 < factor.min() and factor.max() <= 1.0
    # the finer of the two profiles runs at the thread pitch: most of its power lies near 1/4 cycles per px
    fine = rows[:, 0] if np.std(np.diff(rows[:, 0])) > np.std(np.diff(columns[0])) else columns[0]
    power = np.abs(np.fft.rfft(fine - fine.mean())) ** 2
    frequency = np.fft.rfftfreq(len(fine))
    assert power[(frequency > 0.2) & (frequency < 0.3)].sum() > 0.5 * power.sum()

