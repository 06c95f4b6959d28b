"""A placed line's truth: its ink envelope polygon and its baseline, measured on the pixels that are pasted.

Why a module of its own: this is the convention the segmenter learns, so it is stated and measured in one
place. It follows the kraken/eScriptorium convention of the real pages, and is measured on the very
pixels that are pasted, so it cannot drift from the ink:

- polygon: the line's ink envelope. The curved line crop is cut into x bins about one text
  height wide; each bin gives its top-most and bottom-most ink row (ink above ``INK_LEVEL``); the
  polygon runs along the upper envelope left to right and back along the lower one, padded by
  ``PADDING`` text heights. Between bins it takes the outer of the two neighbours, so no ink of a bin
  falls outside.
- baseline: the lower edge of the dense ink band, the row under the row-wise ink density peak where the
  density falls below ``BAND_LEVEL`` of that peak, found once per line image (a straight line in the
  crop's frame) and then carried through the crop's curve, one point per bin, spanning the ink, and
  kept inside the polygon.

Both are mapped to the page by the same map that places the ink (``ink.draw_line``), so a point of the
ink and of the truth land together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Point = tuple[float, float]

#: A crop pixel is ink where its inverted grey value is above this share of full ink.
INK_LEVEL = 0.3
#: The baseline is where the row-wise ink density falls under this share of its peak.
BAND_LEVEL = 0.3
#: Envelope bin width and polygon padding, in text heights (line image heights on the page).
BIN_WIDTH, PADDING = 1.0, 0.1
#: ``INK_LEVEL`` in inverted grey levels (0-255): the threshold every ink mask uses.
INK_VALUE = 255 * INK_LEVEL


@dataclass(frozen=True)
class SyntheticLine:
    """One placed line: its ink envelope polygon (closed ring implied) and baseline (left to right),
    in page pixels."""

    polygon: tuple[Point, ...]
    baseline: tuple[Point, ...]


def band_bottom(ink: np.ndarray) -> float:
    """Row (crop pixels, a row edge) under which the row-wise ink density stays below ``BAND_LEVEL`` of
    its peak: the feet of the letters, i.e. the baseline."""
    density = (ink > INK_VALUE).mean(axis=1)
    peak = int(np.argmax(density))
    below = np.flatnonzero(density[peak:] < BAND_LEVEL * density[peak])
    return float(peak + below[0]) if below.size else float(len(density))


def envelope(ink: np.ndarray, text_height: float
             ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]] | None:
    """Padded ink envelope polygon of a line crop (its own pixels, ``(N, 2)``), the x stops of its
    baseline (the ink's ends and the bin centres) and the polygon's upper and lower edge at each stop
    (a baseline point is kept between them; -inf and inf where a bin has no ink); None when the crop
    has no ink.

    The clamp matters where a bin's ink ends above the band of the whole line (a short crop of high
    letters, an apostrophe at the end): the baseline there stays inside the polygon, as in a
    kraken/eScriptorium transcription."""
    mask = ink > INK_VALUE
    columns = mask.any(axis=0)
    ink_columns = np.flatnonzero(columns)
    if not ink_columns.size:
        return None
    x0, x1 = int(ink_columns[0]), int(ink_columns[-1]) + 1
    rows = mask.shape[0]
    bins = max(1, round((x1 - x0) / (BIN_WIDTH * text_height)))
    edges = np.unique(np.linspace(0, x1 - x0, bins + 1).round().astype(np.int64))
    inked = np.logical_or.reduceat(mask[:, x0:x1], edges[:-1], axis=1)  # (rows, bins): ink in that row of the bin
    has = inked.any(axis=0)
    top = np.where(has, np.argmax(inked, axis=0), np.inf)
    bottom = np.where(has, rows - np.argmax(inked[::-1], axis=0), -np.inf)
    centres = x0 + (edges[:-1] + edges[1:]) / 2
    pad = PADDING * text_height

    def side(level: np.ndarray, outer) -> np.ndarray:
        """``(n, 2)`` points along one envelope, left to right: the bin centres at their own level,
        the edges between bins at the outer of the two neighbours (``outer`` is ``np.minimum`` for the
        top, whose empty bins are inf, ``np.maximum`` for the bottom, -inf), none for empty bins."""
        points = np.empty((2 * len(centres) - 1, 2))
        points[0::2, 0], points[0::2, 1] = centres, level
        points[1::2, 0], points[1::2, 1] = x0 + edges[1:-1], outer(level[:-1], level[1:])
        ends = np.array([[x0 - pad, level[0]], [x1 + pad, level[-1]]])
        return np.concatenate([ends[:1], points[np.isfinite(points[:, 1])], ends[1:]])

    upper, lower = side(top, np.minimum), side(bottom, np.maximum)
    polygon = np.concatenate([upper - (0, pad), lower[::-1] + (0, pad)])
    stops = np.concatenate([[x0], centres, [x1]]).astype(np.float64)
    high = np.concatenate([top[:1], top, top[-1:]]) - pad
    low = np.concatenate([bottom[:1], bottom, bottom[-1:]]) + pad
    return polygon, stops, (np.where(np.isfinite(high), high, -np.inf), np.where(np.isfinite(low), low, np.inf))
