"""Marks on the paper that are not text lines: stamps, printed logos and barcodes, and punch holes.

Why a module of its own: a segmenter must learn to leave these alone, and each is a small shape drawn
once at its own size (a stamp's box, a hole's disc) for the paper (``paper.finish``) to paste.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

from text_recognizer.segmentation.synthetic.style import Style


def stamp(style: Style, rng: np.random.Generator) -> tuple[tuple[int, int, int, int], Image.Image, np.ndarray]:
    """A stamp or printed mark that is not a text line: its box, coverage and RGB colour."""
    size = min(int(style.width * rng.uniform(0.1, 0.22)), style.height, style.width)
    mask = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask)
    stroke = max(2, size // 40)
    if style.stamp == "ring":
        draw.ellipse((stroke, stroke, size - stroke, size - stroke), outline=255, width=stroke)
        inner = size // 5
        draw.ellipse((inner, inner, size - inner, size - inner), outline=255, width=max(1, stroke // 2))
        dot = size / 30
        for angle in np.linspace(0, 2 * np.pi, int(rng.integers(8, 16)), endpoint=False):  # letters round it
            cx, cy = size / 2 + size * 0.4 * math.cos(angle), size / 2 + size * 0.4 * math.sin(angle)
            draw.ellipse((cx - dot, cy - dot, cx + dot, cy + dot), fill=255)
    elif style.stamp == "box":
        draw.rectangle((stroke, size // 4, size - stroke, 3 * size // 4), outline=255, width=stroke)
        draw.rectangle((size // 6, size // 3, 5 * size // 6, 2 * size // 3), fill=255)
    elif style.stamp == "logo":
        draw.ellipse((0, 0, size // 2, size // 2), fill=255)
        draw.polygon([(size // 3, size), (size, size // 3), (size, size)], fill=255)
    else:  # barcode
        x = 0
        while x < size:
            bar = int(rng.integers(1, 6)) * stroke // 2 + 1
            if rng.random() < 0.5:
                draw.rectangle((x, size // 3, x + bar, 2 * size // 3), fill=255)
            x += bar + 1
    mask = mask.rotate(rng.uniform(-30, 30), resample=Image.Resampling.BILINEAR)
    cover = np.asarray(mask, dtype=np.float32) / 255
    if style.stamp in ("ring", "box"):  # stamp ink is patchy
        cover = cover * np.clip(0.8 + 0.4 * rng.standard_normal(cover.shape, dtype=np.float32), 0, 1)
    cover = Image.fromarray(np.rint(cover * rng.uniform(0.4, 0.9) * 255).astype(np.uint8))
    x0, y0 = int(rng.integers(0, style.width - size + 1)), int(rng.integers(0, style.height - size + 1))
    colours = {"ring": [(0.8, 0.15, 0.2), (0.25, 0.3, 0.75), (0.45, 0.2, 0.55)], "box": [(0.25, 0.3, 0.75)],
               "logo": [(0.1, 0.1, 0.1), (0.2, 0.35, 0.6)], "barcode": [(0.05, 0.05, 0.05)]}[style.stamp]
    colour = np.array(colours[int(rng.integers(len(colours)))])
    return (x0, y0, x0 + size, y0 + size), cover, colour


def holes(style: Style, rng: np.random.Generator) -> list[tuple[int, tuple[int, int], Image.Image]]:
    """Punch holes near the left (or right) edge, dark or light: (grey value, top-left corner, disc mask)."""
    W, H = style.width, style.height
    radius = W * rng.uniform(0.01, 0.015)
    cx = W * rng.uniform(0.025, 0.04)
    cx = W - cx if style.holes_right else cx
    gap = W * (0.38 if style.holes == 2 else 0.2)
    value = int(rng.uniform(10, 60) if style.holes_dark else rng.uniform(235, 255))
    r = int(radius) + 2
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    disc = Image.fromarray(np.rint(np.clip(radius + 0.5 - np.hypot(yy, xx), 0, 1) * 255).astype(np.uint8))
    holes = []
    for k in range(style.holes):
        cy = H / 2 + (k - (style.holes - 1) / 2) * gap
        corner = (int(cx) - r, int(cy) - r)
        if 0 <= corner[0] <= W - 2 * r - 1 and 0 <= corner[1] <= H - 2 * r - 1:
            holes.append((value, corner, disc))
    return holes
