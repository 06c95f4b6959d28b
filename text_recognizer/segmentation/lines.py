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


def reading_order(lines: list[FoundLine]) -> list[FoundLine]:
    """Top to bottom by the baseline's middle; lines whose middles are within a quarter of a line's height
    of each other (a line and a note beside it, a date right of a salutation) left to right. One column:
    regions are not found yet."""
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
