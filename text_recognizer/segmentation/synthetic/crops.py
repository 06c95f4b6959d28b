"""Line crops as the layout uses them: inverted and trimmed to their ink, cut at a word gap to fit a
column, and joined to continue a short line.

Why a module of its own: these work in a crop's own pixels, before anything is placed on the page, and
the layout (``layout.plan``) only asks for a crop that fits. Crops are ``uint8`` arrays with ink high
(255: full ink); each travels with its band bottom (the baseline row, ``truth.band_bottom``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from PIL import Image

from text_recognizer.segmentation.synthetic.truth import INK_VALUE, band_bottom

#: A run of empty columns this many crop heights wide separates two words (lines are cut there).
WORD_GAP = 0.15


def crops(line_images: Iterable[Image.Image]) -> Iterator[tuple[np.ndarray, float]]:
    """Each line image inverted (ink high, uint8) and trimmed to its ink columns, with its band bottom;
    all-white images are skipped."""
    for image in line_images:
        ink = 255 - np.asarray(image.convert("L"), dtype=np.uint8)
        columns = np.flatnonzero((ink > INK_VALUE).any(axis=0))
        if columns.size:
            yield ink[:, columns[0]:columns[-1] + 1], band_bottom(ink)


def prefix(ink: np.ndarray, limit: float) -> np.ndarray | None:
    """The longest start of ``ink`` no wider than ``limit`` columns that ends at a word gap (a hard cut
    inside the first word when even that is too wide); None when under one column is left."""
    if ink.shape[1] <= limit:
        return ink
    if limit < 1:
        return None
    empty = np.concatenate([[0], ~(ink > INK_VALUE).any(axis=0), [0]]).astype(np.int8)
    edges = np.diff(empty)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    fits = (ends - starts >= WORD_GAP * ink.shape[0]) & (starts <= limit)
    cut = int(starts[fits].max()) if fits.any() else int(limit)
    columns = np.flatnonzero((ink[:, :cut] > INK_VALUE).any(axis=0))
    return ink[:, :columns[-1] + 1] if columns.size else None


def join(ink: np.ndarray, band: float, rows: int, other: np.ndarray, other_band: float,
         gap: int) -> tuple[np.ndarray, float]:
    """``other`` appended to ``ink`` after ``gap`` empty columns, resized to ``rows`` rows per line image
    and moved up or down so that the bands' bottoms (the baselines) meet; the joined crop and its band.

    Why: real lines fill their column, while a line crop scaled small covers a fraction of a wide page;
    consecutive crops (usually the same writer) continue it."""
    if other.shape[0] != rows:
        ratio = rows / other.shape[0]
        size = (max(1, round(other.shape[1] * ratio)), rows)
        other = np.asarray(Image.fromarray(other).resize(size, Image.Resampling.BILINEAR))
        other_band *= ratio
    dy = round(band - other_band)  # rows to move ``other`` down
    top, bottom = min(0, dy), max(ink.shape[0], dy + other.shape[0])
    joined = np.zeros((bottom - top, ink.shape[1] + gap + other.shape[1]), np.uint8)
    joined[-top:-top + ink.shape[0], :ink.shape[1]] = ink
    joined[dy - top:dy - top + other.shape[0], ink.shape[1] + gap:] = other
    return joined, band - top
