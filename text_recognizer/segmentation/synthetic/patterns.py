"""Patterns that follow the paper's own axes and so turn with the page: rules (ruled, squared and Seyès
paper), the red margin rule, and the threads of woven (linen) or laid paper.

Why a module of its own: each of these is a 1-D profile across one axis of the unrotated page, and a
page-size image of it costs one table and a few hundred copies of a row or a column
(``profile_lookup``), where drawing it in 2-D would cost a pass of arithmetic per pixel. Patterns come as
8-bit page-size images for the paper (``paper.finish``) to apply.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

from text_recognizer.segmentation.synthetic.style import Style

#: Each gap between two threads of woven or laid paper is up to this share deeper or shallower than the
#: mean (threads are not all equally thick).
THREAD_SPREAD = 0.4
#: Laid paper's chain lines cross the laid lines every this many laid-line periods.
CHAIN_PERIODS = (20.0, 35.0)


def unrotated(style: Style) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The unrotated-frame coordinates of pixel centres as sums of a row and a column term:
    ``qx = ax[:, None] + bx[None, :]`` and ``qy = ay[:, None] + by[None, :]``."""
    H, W = style.height, style.width
    c, s = math.cos(math.radians(style.angle)), math.sin(math.radians(style.angle))
    ys = np.arange(H, dtype=np.float64) + 0.5 - H / 2
    xs = np.arange(W, dtype=np.float64) + 0.5 - W / 2
    return s * ys, c * xs + W / 2, c * ys + H / 2, -s * xs


def profile_lookup(a: np.ndarray, b: np.ndarray, profile) -> np.ndarray:
    """``profile(q)`` (0-1) as uint8 on the grid ``q = a[:, None] + b[None, :]``, with q rounded to 1/4 px.

    One of ``a`` and ``b`` changes slowly (the page turns by a few degrees at most), so the grid is a
    few hundred runs of equal rows or columns, each a copy of one profile read from a table.
    """
    ia = np.rint((a - a.min()) * 4).astype(np.int64)
    ib = np.rint((b - b.min()) * 4).astype(np.int64)
    q = a.min() + b.min() + np.arange(int(ia.max()) + int(ib.max()) + 1) / 4
    table = np.clip(np.rint(profile(q) * 255), 0, 255).astype(np.uint8)
    out = np.empty((len(a), len(b)), np.uint8)
    by_columns = np.ptp(ib) <= np.ptp(ia)
    slow = ib if by_columns else ia
    starts = np.concatenate([[0], np.flatnonzero(np.diff(slow)) + 1, [len(slow)]])
    for start, end in zip(starts[:-1], starts[1:]):
        if by_columns:
            out[:, start:end] = table[ia + ib[start]][:, None]
        else:
            out[start:end, :] = table[ia[start] + ib][None, :]
    return out


def lines_profile(period: float, offset: float, width: float):
    """Anti-aliased lines ``width`` px wide every ``period`` px from ``offset``, as a function of q."""
    def profile(q: np.ndarray) -> np.ndarray:
        t = (q - offset) / period
        distance = np.abs(t - np.round(t)) * period
        return np.clip(width / 2 + 0.5 - distance, 0, 1)
    return profile


def rules(style: Style, phase: float) -> Image.Image | None:
    """Page-size rule coverage (255: on a rule) of the ruled, squared or Seyès paper, turned with the page."""
    if not style.grid:
        return None
    ax, bx, ay, by = unrotated(style)
    g, width = style.grid_pitch, max(1.0, 0.025 * style.text_height)
    if style.grid == "seyes":  # thin lines every g, a stronger one every 4 g (where the text sits)
        thin, strong = lines_profile(g, phase, width * 0.6), lines_profile(4 * g, phase, width)
        cover = profile_lookup(ay, by, lambda q: np.maximum(0.5 * thin(q), strong(q)))
    else:
        cover = profile_lookup(ay, by, lines_profile(g, phase, width))
    if style.grid in ("squared", "seyes"):
        period = g if style.grid == "squared" else 4 * g
        vertical = profile_lookup(ax, bx, lines_profile(period, style.columns[0][0], width * 0.8))
        np.maximum(cover, vertical, out=cover)
    return Image.fromarray(cover)


def margin_rule(style: Style) -> tuple[tuple[int, int, int, int], Image.Image] | None:
    """A red vertical rule left of the text: the box of pixels it can touch and its coverage there."""
    ax, bx, _, _ = unrotated(style)
    x = style.columns[0][0] - 0.4 * style.text_height
    reach = abs(math.sin(math.radians(style.angle))) * style.height / 2 + 4
    x0, x1 = max(0, int(x - reach)), min(style.width, int(x + reach) + 1)
    if x1 <= x0:
        return None
    distance = np.abs(ax[:, None] + bx[None, x0:x1] - x)
    cover = np.clip(max(1.0, 0.03 * style.text_height) / 2 + 0.5 - distance, 0, 1)
    return (x0, 0, x1, style.height), Image.fromarray(np.rint(cover * 255).astype(np.uint8))


def threads_profile(pitch: float, strength: float, rng: np.random.Generator):
    """Factor (0-1) of the light across parallel threads ``pitch`` px apart, as a function of q: 1 on a
    thread's crown, down to ``1 - strength`` (times the gap's own depth) in the gap between two threads.
    The threads wander slowly by up to a fifth of a pitch, as woven threads do."""
    offset = rng.uniform(0, pitch)
    depths = rng.uniform(1 - THREAD_SPREAD, 1 + THREAD_SPREAD, 1024)  # one per gap, repeating
    knots = 20 * pitch  # the wander changes over about 20 threads
    wander = rng.uniform(-0.2, 0.2, 64)

    def profile(q: np.ndarray) -> np.ndarray:
        t = (q - offset) / pitch + np.interp(q / knots, np.arange(len(wander)), wander, period=len(wander))
        gap = np.round(t).astype(np.int64) % len(depths)  # the gap nearest q; crowns sit half way between
        return 1 - strength * depths[gap] * (0.5 + 0.5 * np.cos(2 * np.pi * t))
    return profile


def weave(style: Style, rng: np.random.Generator) -> list[Image.Image]:
    """Page-size light factors (255: the paper as it is) of woven or laid paper, turned with the page; the
    paper's light is multiplied by each; none for plain paper.

    Linen: threads across and along the page of about the same pitch, a fine low-contrast crosshatch.
    Laid: fine ribs (the laid lines) along one axis and faint chain lines every 20-35 ribs across them.
    Each factor is a 1-D profile copied over the page like the rules."""
    if not style.weave:
        return []
    ax, bx, ay, by = unrotated(style)
    pitch, strength = style.weave_pitch, style.weave_strength
    first = threads_profile(pitch, strength, rng)
    if style.weave == "linen":
        second = threads_profile(pitch * rng.uniform(0.8, 1.25), strength * rng.uniform(0.7, 1.0), rng)
    else:
        chain = lines_profile(pitch * rng.uniform(*CHAIN_PERIODS), rng.uniform(0, 100), max(1.0, 0.3 * pitch))

        def second(q: np.ndarray) -> np.ndarray:
            return 1 - strength * chain(q)
    if rng.random() < 0.5:  # ribs across the page or along it
        first, second = second, first
    return [Image.fromarray(profile_lookup(ay, by, first)), Image.fromarray(profile_lookup(ax, bx, second))]
