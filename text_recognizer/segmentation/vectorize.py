"""Region and core probability maps -> line polygons and baselines (in map pixels).

The steps:

1. **Cores**: the core map above ``THRESHOLD``. The gaps between words break a core into pieces; a
   closing along x only (a few core heights wide) joins pieces that lie on one line, and never joins two
   lines, which are apart in y.
2. **Noise**: pieces shorter than ``MIN_LENGTH`` core heights (a dot, a stray mark) are dropped.
3. **Region pixels to lines**: a pixel of the region map above ``THRESHOLD`` that lies between two cores in
   its column joins the upper one if it is within ``SPLIT`` of the way down from it, else the lower one:
   a line reaches further above its core (ascenders) than below it (descenders), so the boundary between
   two lines sits nearer the upper baseline. Pixels with a core on one side only join it within ``REACH``
   core heights; the rest join their nearest core in any direction (a distance transform) within
   ``REACH``. Ascenders and descenders that touch are thus split between their lines instead of merging them.
4. **Geometry**: the polygon follows the upper and lower edges of the line's pixels in x bins one core
   height wide; the baseline follows the lower edge of its core in the same bins, smoothed.
5. **Slivers**: a line far thinner than the page's median line (``MIN_HEIGHT_SHARE``), or far shorter
   (``MIN_LENGTH_SHARE``), is dropped: on cursive pages the loops of ascenders and descenders that reach into
   the gap between two lines, paper grain and show-through give thin pieces of core that no transcriber calls
   a line. Relative to the page, so small writing on a page of small writing stays.
6. **Show-through**: with the page's darkness (``darkness``), a line whose darkest ink is far lighter than the
   page's median line's (``MIN_DARKNESS_SHARE``) is dropped: the other side's writing, seen through thin paper,
   is found as lines of its own, fainter than any written on this side. Also relative to the page, so a page
   written all in pale ink or pencil keeps its lines.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

Point = tuple[float, float]

THRESHOLD = 0.5
#: Core pieces closer than this many core heights along x are one line.
JOIN = 4.0
#: A line's core is at least this many core heights long.
MIN_LENGTH = 2.0
#: A line's mean core probability (over its core pixels, those above ``THRESHOLD``) is at least this.
#: 0.85 rather than 0.8 since seg-2026.12.07a: chosen with the sliver shares below on the val pages of the sources of
#: ``data/`` (detection F1, Copiste val kept >= 0.99; ``benchmarks/results/page_reading.md``).
MIN_SCORE = 0.85
#: A line's polygon is at least this share of the page's median line height...
MIN_HEIGHT_SHARE = 0.5
#: ...and its baseline at least this share of the page's median baseline length.
MIN_LENGTH_SHARE = 0.1
#: A line's darkest ink (``DARK_QUANTILE`` of its pixels' darkness) is at least this share of the page's median
#: line's. 0.4 to 0.6 cost the sources' val pages and Copiste val nothing (detection F1 equal to the third decimal);
#: 0.5 is the middle (``benchmarks/results/page_reading.md``, fifty-sixth session).
MIN_DARKNESS_SHARE = 0.5
DARK_QUANTILE = 0.9
#: Region pixels further than this many core heights from every core belong to no line.
REACH = 3.0
#: Ink-hugging polygons are padded by this many core heights above and below the ink.
INK_PADDING = 0.6
#: Between two cores in a column, the upper line's share of the gap (its descenders). Measured on the true
#: polygons of the Copiste train and Stanford pages with each line's deepest point, the median is 0.55: an
#: upper bound, since most of a line's length has no descender, hence a little less.
SPLIT = 0.45


def core_height(cores: np.ndarray) -> float:
    """The median height of the core bands (pixels): area over length, per piece, weighted by length."""
    labels, count = ndimage.label(cores)
    if not count:
        return 1.0
    boxes = ndimage.find_objects(labels)
    areas = ndimage.sum_labels(cores, labels, np.arange(1, count + 1))
    lengths = np.array([box[1].stop - box[1].start for box in boxes], dtype=np.float64)
    heights = areas / lengths
    order = np.argsort(heights)
    middle = np.searchsorted(np.cumsum(lengths[order]), lengths.sum() / 2)
    return float(max(1.0, heights[order][min(middle, count - 1)]))


def vectorize(region: np.ndarray, core: np.ndarray, threshold: float = THRESHOLD, ink: np.ndarray | None = None,
              darkness: np.ndarray | None = None) -> list[tuple[list[Point], list[Point]]]:
    """``(polygon, baseline)`` per line found in the ``(h, w)`` probability maps, in map pixels (x right, y
    down; a pixel's centre at +0.5), in no particular order. With ``ink`` (an ``(h, w)`` bool map of the
    page's ink), polygons hug the ink of their line's pixels (and its core), padded by ``INK_PADDING`` core
    heights, instead of the whole region. With ``darkness`` (``(h, w)``, 0 paper to 1 black), show-through is
    left out (the module's step 6)."""
    cores = core > threshold
    if not cores.any():
        return []
    height = core_height(cores)
    join = max(3, int(round(JOIN * height)))
    joined = ndimage.binary_closing(cores, structure=np.ones((1, join), bool))  # word gaps bridged along x
    joined |= cores
    labels, count = ndimage.label(joined)
    boxes = ndimage.find_objects(labels)
    keep = np.zeros(count + 1, bool)
    scores = np.ones(count)
    if MIN_SCORE > 0:
        scores = ndimage.mean(core, np.where(cores, labels, 0), np.arange(1, count + 1))
    for label, box in enumerate(boxes, start=1):
        keep[label] = (box[1].stop - box[1].start) >= MIN_LENGTH * height and scores[label - 1] >= MIN_SCORE
    labels = np.where(keep[labels], labels, 0)
    if not labels.any():
        return []
    owner = np.where((region > threshold) | (labels > 0), _owners(labels, REACH * height), 0)
    step = max(2, int(round(height)))
    lines, strengths = [], []
    for label, box in enumerate(ndimage.find_objects(owner), start=1):
        if box is None or not keep[label]:
            continue
        mine, line_core = owner[box] == label, labels[box] == label
        pad = 0.0
        if ink is not None:
            mine, pad = mine & (ink[box] | line_core), INK_PADDING * height
        found = _geometry(mine, line_core, box, step, pad)
        if found is not None:
            lines.append(found)
            if darkness is not None:
                strengths.append(float(np.quantile(darkness[box][mine], DARK_QUANTILE)) if mine.any() else 0.0)
    kept = sliver_free(lines)
    if darkness is not None:
        kept &= dark_enough(strengths)
    return [line for line, keep_line in zip(lines, kept) if keep_line]


def sliver_free(lines: list[tuple[list[Point], list[Point]]]) -> np.ndarray:
    """``(len(lines),)`` bool: False for a line whose polygon is under ``MIN_HEIGHT_SHARE`` of the median polygon
    height or whose baseline is under ``MIN_LENGTH_SHARE`` of the median baseline length (step 5)."""
    if len(lines) < 2:
        return np.ones(len(lines), bool)
    heights = np.array([max(y for _, y in polygon) - min(y for _, y in polygon) for polygon, _ in lines])
    lengths = np.array([baseline[-1][0] - baseline[0][0] for _, baseline in lines])
    return (heights >= MIN_HEIGHT_SHARE * np.median(heights)) & (lengths >= MIN_LENGTH_SHARE * np.median(lengths))


def dark_enough(strengths: list[float]) -> np.ndarray:
    """``(len(strengths),)`` bool: False for a line whose darkest ink is under ``MIN_DARKNESS_SHARE`` of the page's
    median line's (step 6)."""
    values = np.asarray(strengths, dtype=np.float64)
    if len(values) < 2:
        return np.ones(len(values), bool)
    return values >= MIN_DARKNESS_SHARE * np.median(values)


def _owners(labels: np.ndarray, reach: float) -> np.ndarray:
    """For every pixel, the core label it belongs to (0: none within ``reach``), as the module's step 3 says."""
    h = labels.shape[0]
    rows = np.arange(h)[:, None]
    has = labels > 0
    above_row = np.maximum.accumulate(np.where(has, rows, -1), axis=0)  # (h, w) last core row at or above
    below_row = np.minimum.accumulate(np.where(has, rows, h)[::-1], axis=0)[::-1]  # first core row at or below
    above = np.where(above_row >= 0, np.take_along_axis(labels, np.clip(above_row, 0, h - 1), 0), 0)
    below = np.where(below_row < h, np.take_along_axis(labels, np.clip(below_row, 0, h - 1), 0), 0)
    up, down = rows - above_row, below_row - rows  # distances to those cores
    above = np.where(up <= reach, above, 0)
    below = np.where(down <= reach, below, 0)
    upper_share = up <= SPLIT * (up + down)
    owner = np.where((above > 0) & (below > 0), np.where(upper_share, above, below), np.maximum(above, below))
    distance, (near_rows, near_cols) = ndimage.distance_transform_edt(~has, return_indices=True)
    nearest = np.where(distance <= reach, labels[near_rows, near_cols], 0)
    return np.where(owner > 0, owner, nearest)


def _geometry(mine: np.ndarray, core: np.ndarray, box: tuple[slice, slice], step: int, pad: float = 0.0
              ) -> tuple[list[Point], list[Point]] | None:
    """Polygon from ``mine``'s envelopes in x bins of ``step`` px (``pad`` px further up and down); baseline
    from ``core``'s lower edge."""
    top, left = box[0].start, box[1].start
    upper, lower, feet = [], [], []
    width = mine.shape[1]
    for x0 in range(0, width, step):
        x1 = min(width, x0 + step)
        rows = np.flatnonzero(mine[:, x0:x1].any(1))
        if len(rows):
            upper += [(left + x0, top + rows[0] - pad), (left + x1, top + rows[0] - pad)]
            lower += [(left + x0, top + rows[-1] + 1 + pad), (left + x1, top + rows[-1] + 1 + pad)]
        core_rows = np.flatnonzero(core[:, x0:x1].any(1))
        if len(core_rows):
            feet.append((left + (x0 + x1) / 2, top + core_rows[-1] + 1.0))
    if len(upper) < 2 or len(feet) < 1:
        return None
    polygon = upper + lower[::-1]
    xs = np.array([x for x, _ in feet])
    ys = ndimage.median_filter(np.array([y for _, y in feet]), size=min(5, len(feet)), mode="nearest")
    # the baseline spans the core from its left to its right end
    core_cols = np.flatnonzero(core.any(0))
    ends = np.array([left + core_cols[0], left + core_cols[-1] + 1], dtype=np.float64)
    xs = np.concatenate([[ends[0]], xs, [ends[1]]])
    ys = np.concatenate([[ys[0]], ys, [ys[-1]]])
    baseline = [(float(x), float(y)) for x, y in zip(xs, ys)]
    return [(float(x), float(y)) for x, y in polygon], baseline
