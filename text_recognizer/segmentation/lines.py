"""What every segmenter returns: found lines (polygon + baseline in page pixels), in reading order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Point = tuple[float, float]


@dataclass(frozen=True)
class FoundLine:
    """A text line found on a page: polygon and baseline in page pixels (the PAGE/kraken convention)."""

    polygon: tuple[Point, ...]
    baseline: tuple[Point, ...]

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of the polygon."""
        xs, ys = [p[0] for p in self.polygon], [p[1] for p in self.polygon]
        return min(xs), min(ys), max(xs), max(ys)


#: A vertical gap splits the page into columns only if each side holds this many lines...
COLUMN_LINES = 2
#: ...and the narrower side's median line is at least this share of the wider side's (margin notes are not a column).
COLUMN_WIDTH_SHARE = 0.25
#: Lines' vertical extents, for finding the gaps between them, leave out this share of their height at the top and
#: the bottom (ascenders and descenders of neighbouring lines overlap).
TRIM = 0.25


def reading_order(lines: list[FoundLine]) -> list[FoundLine]:
    """``lines`` in reading order, by recursive cuts of the page along its empty gaps (an XY cut):

    1. a vertical gap that no line crosses, with a column on either side (``COLUMN_LINES`` lines each, the
       narrower side's lines at least ``COLUMN_WIDTH_SHARE`` as wide as the wider side's): the left column
       is read before the right one;
    2. else the horizontal gaps that no line crosses (lines trimmed by ``TRIM`` at the top and the bottom)
       make bands; the first gap with columns above or below it cuts the page in two, each read as in 1-3;
    3. without columns, the bands are read top to bottom, and each band top to bottom by the baseline's
       middle, lines whose middles lie within a quarter of a line's height of each other (a marginal note
       beside its line, a date right of a salutation) left to right.

    So two columns are read one after the other; a marginal note comes just before (left margin) or after
    (right margin) the line beside it; a heading above two columns comes first.
    """
    lines = list(lines)
    if len(lines) <= 1:
        return lines
    columns = _column_split(lines)
    if columns is not None:
        return [line for side in columns for line in reading_order(side)]
    bands = _bands(lines)
    for k in range(1, len(bands)):  # a heading above columns, columns above a closing line
        top = [line for band in bands[:k] for line in band]
        bottom = [line for band in bands[k:] for line in band]
        if _column_split(top) is not None or _column_split(bottom) is not None:
            return reading_order(top) + reading_order(bottom)
    return [line for band in bands for line in _rows(band)]


def _column_split(lines: list[FoundLine]) -> tuple[list[FoundLine], list[FoundLine]] | None:
    """The left and right columns at the widest vertical gap that no line crosses, if it separates columns."""
    spans = sorted((line.box[0], line.box[2]) for line in lines)
    best, reach = None, spans[0][1]
    for left, right in spans[1:]:
        if left > reach and (best is None or left - reach > best[1] - best[0]):
            best = (reach, left)
        reach = max(reach, right)
    if best is None:
        return None
    cut = (best[0] + best[1]) / 2
    left = [line for line in lines if line.box[2] <= cut]
    right = [line for line in lines if line.box[0] >= cut]
    if min(len(left), len(right)) < COLUMN_LINES:
        return None
    widths = [float(np.median([line.box[2] - line.box[0] for line in side])) for side in (left, right)]
    if min(widths) < COLUMN_WIDTH_SHARE * max(widths):
        return None
    return left, right


def _bands(lines: list[FoundLine]) -> list[list[FoundLine]]:
    """The lines in bands, top to bottom, split at every horizontal gap that no (trimmed) line crosses."""
    def extent(line: FoundLine) -> tuple[float, float]:
        _, top, _, bottom = line.box
        return top + TRIM * (bottom - top), bottom - TRIM * (bottom - top)

    ordered = sorted(lines, key=lambda line: extent(line)[0])
    bands, reach = [[ordered[0]]], extent(ordered[0])[1]
    for line in ordered[1:]:
        top, bottom = extent(line)
        if top > reach:
            bands.append([line])
        else:
            bands[-1].append(line)
        reach = max(reach, bottom)
    return bands


def _rows(lines: list[FoundLine]) -> list[FoundLine]:
    """Top to bottom by the baseline's middle; lines within a quarter of a line's height left to right."""
    def middle(line: FoundLine) -> float:
        return float(np.mean([y for _, y in line.baseline]))

    ordered = sorted(lines, key=middle)
    rows: list[list[FoundLine]] = []
    for line in ordered:
        _, top, _, bottom = line.box
        if rows and middle(line) - middle(rows[-1][0]) < (bottom - top) / 4:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda item: item.box[0])]
