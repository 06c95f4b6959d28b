"""Find the text lines of a page without a learned model: ink, line cores, pixels to cores, polygons.

Why a classical segmenter first: it needs no weights and no training data, runs in well under a second
on the CPU, and gives the measurement harness (``benchmarks/page_eval.py``) a baseline that learned
segmenters must beat. The steps, at a working resolution where the page's long side is ``WORK_SIDE`` px:

1. **Ink**: the page divided by its own background (a wide median of the grey page), so uneven light
   and paper tone go away, then thresholded by Otsu's rule; specks, ruled lines and page-edge shadows
   (components touching the border) are dropped.
2. **Line cores**: the ink blurred much more along x than along y (a Gaussian ``CORE_SIGMA_X`` by
   ``CORE_SIGMA_Y`` letter heights) is high along a line of writing and low between lines, even where
   ascenders and descenders touch; thresholding it at a share of its local maximum gives one blob per
   line.
3. **Pixels to lines**: every ink pixel joins its nearest core (a distance transform), so strokes that
   reach into the next line are split between the two instead of merging them.
4. **Geometry**: a line's polygon follows the upper and lower envelope of its ink (in x bins), padded a
   little; its baseline is a straight or gently curved fit to the lower edge of its core. Both are
   returned in the original page's pixels.
"""

from __future__ import annotations

import numpy as np
from PIL import Image
from scipy import ndimage

from text_recognizer.segmentation.lines import FoundLine, reading_order
from text_recognizer.stem import to_grayscale

__all__ = ["FoundLine", "reading_order", "segment_page"]

#: The page is segmented with its long side at this many pixels (coordinates are scaled back).
WORK_SIDE = 1200
#: Blur of the ink map that makes line cores, in letter heights (x: along the line, y: across).
CORE_SIGMA_X, CORE_SIGMA_Y = 2.5, 0.35
#: A core pixel is above this share of the blurred ink's 99th percentile.
CORE_LEVEL = 0.3
#: Polygon envelope bin width and padding, in letter heights.
BIN_WIDTH, PADDING = 0.75, 0.15
#: Flourishes further than this from the line's core (letter heights) stay outside its polygon.
REACH = 1.0
#: Lines shorter than this (letter heights) or with less ink than this many pixels are noise.
MIN_LINE_LENGTH, MIN_LINE_INK = 1.5, 40

def ink_map(gray: np.ndarray) -> np.ndarray:
    """``(h, w)`` grey in [0, 1] (1 = paper) -> boolean ink, background-normalised and cleaned."""
    small = gray[::4, ::4]  # the background varies slowly: estimate it at a quarter of the resolution
    background = ndimage.median_filter(small, size=max(5, min(small.shape) // 25))  # (h/4, w/4)
    background = np.kron(background, np.ones((4, 4), dtype=np.float32))[: gray.shape[0], : gray.shape[1]]  # (h, w)
    flat = np.clip(gray / np.maximum(background, 1e-3), 0.0, 1.0)  # (h, w) paper ~1
    darkness = 1.0 - flat
    threshold = max(_otsu(darkness), 0.08)  # a blank page has no contrast worth splitting
    ink = darkness > threshold
    labels, count = ndimage.label(ink)
    if count == 0:
        return ink
    boxes = ndimage.find_objects(labels)
    sizes = ndimage.sum(ink, labels, range(1, count + 1))
    keep = np.zeros(count + 1, dtype=bool)
    h, w = ink.shape
    for i, (box, size) in enumerate(zip(boxes, sizes), start=1):
        height, width = box[0].stop - box[0].start, box[1].stop - box[1].start
        touches_edge = box[0].start == 0 or box[1].start == 0 or box[0].stop == h or box[1].stop == w
        ruled = width > 0.3 * w and size < 0.15 * width * height  # long and thin: a ruled line
        keep[i] = size >= 6 and not touches_edge and not ruled and height < 0.3 * h
    return keep[labels]


def _otsu(values: np.ndarray) -> float:
    histogram, edges = np.histogram(values, bins=128, range=(0.0, 1.0))
    centres = (edges[:-1] + edges[1:]) / 2
    weight = np.cumsum(histogram)
    mean = np.cumsum(histogram * centres)
    total, total_mean = weight[-1], mean[-1]
    between = (total_mean * weight - mean * total) ** 2 / np.maximum(weight * (total - weight), 1)
    return float(centres[int(np.argmax(between[:-1]))])


def letter_height(ink: np.ndarray) -> float:
    """Median height of the ink's mid-sized components: the scale every other size is measured in."""
    labels, count = ndimage.label(ink)
    heights = np.array([s[0].stop - s[0].start for s in ndimage.find_objects(labels)]) if count else np.array([])
    heights = heights[heights >= 4]
    return float(np.median(heights)) if len(heights) else 12.0


def segment_page(page: Image.Image) -> list[FoundLine]:
    """The text lines of ``page`` (any PIL image), in page pixels, in reading order (``reading_order``)."""
    gray = to_grayscale(page)  # (H, W) 1 = paper
    scale = min(1.0, WORK_SIDE / max(gray.shape))
    if scale < 1.0:
        size = (max(1, round(gray.shape[1] * scale)), max(1, round(gray.shape[0] * scale)))
        gray = np.asarray(Image.fromarray((gray * 255).astype(np.uint8)).resize(size, Image.Resampling.BILINEAR),
                          dtype=np.float32) / 255.0
    if min(gray.shape) < 8:
        return []
    ink = ink_map(gray)
    if ink.sum() < MIN_LINE_INK:
        return []
    height = letter_height(ink)
    blurred = ndimage.gaussian_filter(ink.astype(np.float32), (CORE_SIGMA_Y * height, CORE_SIGMA_X * height))
    cores, count = ndimage.label(blurred > CORE_LEVEL * np.percentile(blurred[ink], 99))
    if count == 0:
        return []
    # every ink pixel to its nearest core
    _, (rows, cols) = ndimage.distance_transform_edt(cores == 0, return_indices=True)
    owner = np.where(ink, cores[rows, cols], 0)  # (h, w) line label per ink pixel
    lines = []
    for label, box in enumerate(ndimage.find_objects(owner), start=1):
        if box is None:
            continue
        mine = owner[box] == label
        core = cores[box] == label
        if mine.sum() < MIN_LINE_INK or (box[1].stop - box[1].start) < MIN_LINE_LENGTH * height:
            continue
        found = _line_geometry(mine, core, box, height)
        if found is not None:
            lines.append(found)
    return reading_order([FoundLine(tuple((x / scale, y / scale) for x, y in line.polygon),
                                    tuple((x / scale, y / scale) for x, y in line.baseline)) for line in lines])


def _line_geometry(mine: np.ndarray, core: np.ndarray, box: tuple[slice, slice], height: float) -> FoundLine | None:
    """Polygon from the ink's envelopes in x bins, baseline fitted to the core's lower edge."""
    top, left = box[0].start, box[1].start
    width = mine.shape[1]
    step = max(2, int(BIN_WIDTH * height))
    pad = PADDING * height
    upper, lower, bottoms = [], [], []
    for x0 in range(0, width, step):
        x1 = min(width, x0 + step)
        rows = np.flatnonzero(mine[:, x0:x1].any(1))
        core_rows = np.flatnonzero(core[:, x0:x1].any(1))
        if not len(core_rows):
            continue
        # ink, but no further than REACH letter heights from the core
        rows = rows[(rows >= core_rows[0] - REACH * height) & (rows <= core_rows[-1] + REACH * height)]
        if len(rows):
            upper.append((left + x0, top + rows[0] - pad))
            upper.append((left + x1, top + rows[0] - pad))
            lower.append([(left + x1, top + rows[-1] + 1 + pad), (left + x0, top + rows[-1] + 1 + pad)])
        bottoms.append(((x0 + x1) / 2, core_rows[-1]))
    if len(upper) < 2:
        return None
    lower = [point for pair in reversed(lower) for point in pair]  # right to left
    polygon = [(left - pad, upper[0][1]), *upper, (left + width + pad, upper[-1][1]),
               (left + width + pad, lower[0][1]), *lower, (left - pad, lower[-1][1])]
    if len(bottoms) >= 2:
        xs, ys = np.array(bottoms).T
        # the core's lower edge sits a little below the letters' feet: pull it up by a third of the blur
        fit = np.polyfit(xs, ys, 1 if len(xs) < 6 else 2)
        ends = np.array([0.0, width])
        baseline = tuple((left + float(x), top + float(np.polyval(fit, x)) - CORE_SIGMA_Y * height / 3)
                         for x in np.linspace(ends[0], ends[1], 5))
    else:
        y = top + mine.shape[0] * 0.75
        baseline = ((float(left), y), (float(left + width), y))
    return FoundLine(tuple((float(x), float(y)) for x, y in polygon), baseline)
