"""The drawn page style: the share of woven and laid paper and its thread pitch."""

from __future__ import annotations

import dataclasses

import numpy as np

from text_recognizer.segmentation.synthetic.patterns import weave
from text_recognizer.segmentation.synthetic.style import WEAVE, draw_style


def test_plain_paper_has_no_weave_and_some_pages_are_woven():
    styles = [draw_style(np.random.default_rng(seed)) for seed in range(400)]
    woven = [style for style in styles if style.weave]
    assert WEAVE - 0.07 < len(woven) / len(styles) < WEAVE + 0.07
    assert {style.weave for style in woven} == {"linen", "laid"}
    assert all(2.0 < style.weave_pitch / (style.width / 1000) < 5.5 for style in styles)
    assert weave(dataclasses.replace(styles[0], weave=""), np.random.default_rng(0)) == []
