"""True lines (polygon + baseline) -> the two maps ``LineUNet`` learns: region and core.

Why the core is drawn from the baseline up to ``CORE_SHARE`` of the line's height: the baseline is the one
part of a line that every transcription tool draws the same way, and the band just above it (the letters'
bodies) is where a line's ink is densest and furthest from its neighbours. The line's height is measured on
its own polygon, column by column (the polygon's top above the baseline), and its median taken, so a single
flourish does not swell the band.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

Point = tuple[float, float]

#: The core band spans this share of the line's height above its baseline.
CORE_SHARE = 0.45
#: ...and is at least this many map pixels high.
MIN_CORE = 1.5


def _draw(size: tuple[int, int], draw) -> np.ndarray:
    """A ``(h, w)`` bool mask drawn on a blank ``size = (w, h)`` canvas by ``draw(ImageDraw)``."""
    canvas = Image.new("L", size, 0)
    draw(ImageDraw.Draw(canvas))
    return np.asarray(canvas) > 0


def baseline_at(baseline: Sequence[Point], xs: np.ndarray) -> np.ndarray:
    """The baseline's y at each x (linear between its points, flat beyond its ends)."""
    points = sorted(baseline)
    return np.interp(xs, [p[0] for p in points], [p[1] for p in points])


def line_height(polygon: Sequence[Point], baseline: Sequence[Point]) -> float:
    """Median height of the polygon's top above the baseline over the baseline's columns (page pixels)."""
    poly = np.asarray(polygon, dtype=np.float64)
    left, top = np.floor(poly.min(0)).astype(int)
    right, bottom = np.ceil(poly.max(0)).astype(int)
    size = (max(1, right - left + 1), max(1, bottom - top + 1))
    mask = _draw(size, lambda d: d.polygon([(x - left, y - top) for x, y in poly], fill=1))
    columns = np.flatnonzero(mask.any(0))
    start, stop = min(p[0] for p in baseline), max(p[0] for p in baseline)
    columns = columns[(columns + left >= start) & (columns + left <= stop)]
    if not len(columns):
        return float(max(1.0, (bottom - top) / 2))
    tops = mask[:, columns].argmax(0) + top
    heights = baseline_at(baseline, columns + left) - tops
    return float(max(1.0, np.median(heights)))


def core_polygon(polygon: Sequence[Point], baseline: Sequence[Point], scale: float = 1.0) -> list[Point]:
    """The core band of one line, as a polygon, in the same pixels as its inputs times ``scale``."""
    height = max(MIN_CORE, CORE_SHARE * line_height(polygon, baseline) * scale)
    points = sorted((x * scale, y * scale) for x, y in baseline)
    return points + [(x, y - height) for x, y in reversed(points)]


def rasterize(lines: Sequence[tuple[Sequence[Point], Sequence[Point]]], size: tuple[int, int],
              scale: float = 1.0) -> np.ndarray:
    """``(2, h, w)`` uint8 maps (``unet.CHANNELS``: region, core) of ``lines`` (``(polygon, baseline)`` pairs in
    page pixels) on a map of ``size = (w, h)`` whose pixels are page pixels times ``scale``. Lines without a
    baseline (fewer than 2 points) count as region only: they still show where text is."""
    region = Image.new("L", size, 0)
    core = Image.new("L", size, 0)
    draw_region, draw_core = ImageDraw.Draw(region), ImageDraw.Draw(core)
    for polygon, baseline in lines:
        if len(polygon) < 3:
            continue
        draw_region.polygon([(x * scale, y * scale) for x, y in polygon], fill=1)
        if baseline is not None and len(baseline) >= 2:
            draw_core.polygon(core_polygon(polygon, baseline, scale), fill=1)
    return np.stack([np.asarray(region), np.asarray(core)])
