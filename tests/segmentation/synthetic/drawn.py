"""Drawn line images and page helpers shared by the tests of ``segmentation.synthetic``.

The line images are drawn here (words of dark blocks with ascenders and descenders, 64 px high), since
real line crops are not part of the repository. ``draw_style``/``render`` are the package's test hook:
they let a test fix one layout or paper feature and see the lines' ink apart from the paper.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from PIL import Image, ImageDraw

from text_recognizer.segmentation.synthetic import SyntheticLine, SyntheticPage
from text_recognizer.segmentation.synthetic.compose import render as render_style
from text_recognizer.segmentation.synthetic.style import draw_style


def line_image(rng: np.random.Generator, width: int) -> Image.Image:
    """A 64 px line of 'words': x-height blocks with some ascenders and descenders, gaps between words."""
    image = Image.new("L", (width, 64), 255)
    draw = ImageDraw.Draw(image)
    x = int(rng.integers(5, 20))
    while x < width - 60:
        end = min(width - 10, x + int(rng.integers(40, 160)))
        draw.rectangle((x, 26, end, 45), fill=int(rng.integers(0, 60)))
        for letter in range(x, end - 6, 14):
            kind = rng.random()
            if kind < 0.25:
                draw.rectangle((letter, 8, letter + 4, 26), fill=20)
            elif kind < 0.4:
                draw.rectangle((letter, 45, letter + 4, 60), fill=20)
        x = end + int(rng.integers(18, 34))
    return image


def drawn_lines() -> list[Image.Image]:
    """40 drawn line images, 500-1100 px wide."""
    rng = np.random.default_rng(123)
    return [line_image(rng, int(rng.integers(500, 1100))) for _ in range(40)]


def render(lines, seed: int, **changes) -> tuple[SyntheticPage, np.ndarray]:
    """A 1000 px wide page from ``seed``, with the given style fields fixed, and its lines' ink."""
    rng = np.random.default_rng(seed)
    style = dataclasses.replace(draw_style(rng, 1000), **changes)
    return render_style(lines, rng, style)


def polygon_mask(line: SyntheticLine, size: tuple[int, int]) -> np.ndarray:
    canvas = Image.new("1", size, 0)
    ImageDraw.Draw(canvas).polygon(line.polygon, fill=1, outline=1)
    return np.asarray(canvas, dtype=bool)


def mean_y(line: SyntheticLine) -> float:
    return float(np.mean([y for _, y in line.baseline]))
