"""``compose_page``: a page drawn in four steps, each in its own module: a style (``style``), where the
lines go (``layout``), each line's ink and truth (``ink``), then the paper around the ink (``paper``).

Why a module of its own: it is the one entry point, with the argument checks and the page type; the
steps stay free of each other's order. ``render`` is also the test hook: given a style (one feature fixed
with ``dataclasses.replace``), it returns the lines' ink apart from the paper.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from PIL import Image

from text_recognizer.segmentation.synthetic.crops import crops
from text_recognizer.segmentation.synthetic.ink import draw_line
from text_recognizer.segmentation.synthetic.layout import plan
from text_recognizer.segmentation.synthetic.paper import finish
from text_recognizer.segmentation.synthetic.style import Style, draw_style
from text_recognizer.segmentation.synthetic.truth import SyntheticLine


@dataclass(frozen=True)
class SyntheticPage:
    """A composed page (mode ``"L"`` or ``"RGB"``) and its lines in reading order."""

    image: Image.Image
    lines: tuple[SyntheticLine, ...]


def compose_page(line_images: Iterable[Image.Image], rng: np.random.Generator, *,
                 page_width: int | None = None, letterheads: float = 0.0) -> SyntheticPage:
    """A page made of as many of ``line_images`` (grey crops, dark ink on white) as fit, in order.

    Layout, paper, ink and degradations are drawn from ``rng``; the same generator state gives the same
    page. ``page_width`` fixes the width in pixels (the height follows from a drawn aspect ratio).
    ``letterheads`` is the share of pages printed with a letterhead above the writing (no line of its own).
    Crops that are all white are skipped; a crop that runs past its column is cut at a word gap, and
    one that falls well short of it is continued by the next crops (small text on a wide page can take
    three crops a line, so pass plenty: a page holds up to about 60 lines). The images are read in
    order and no further than the page needs, so an iterator that opens files as it goes saves reading
    the crops a page does not take.
    """
    if page_width is not None and (not isinstance(page_width, numbers.Integral) or page_width < 64):
        raise ValueError(f"page_width must be an int >= 64 or None, got {page_width!r}")
    if not 0.0 <= letterheads <= 1.0:
        raise ValueError(f"letterheads must be a share in [0, 1], got {letterheads!r}")
    style = draw_style(rng, page_width, letterheads)
    return render(line_images, rng, style)[0]


def render(line_images: Iterable[Image.Image], rng: np.random.Generator,
           style: Style) -> tuple[SyntheticPage, np.ndarray]:
    """The page for ``style``, and the ink of its lines alone (``(H, W)`` uint8, 255: full ink; for tests)."""
    placements, phase = plan(crops(line_images), rng, style)
    canvas = np.zeros((style.height, style.width), np.uint8)  # the lines' ink, 255: full ink
    lines = [line for p in placements if (line := draw_line(canvas, p, style, rng)) is not None]
    image = finish(canvas, style, phase, rng)
    return SyntheticPage(image, tuple(lines)), canvas
