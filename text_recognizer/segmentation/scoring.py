"""Score found lines against true lines: one-to-one matching at polygon IoU >= 0.5, precision/recall/F1.

Why rasterised IoU: line polygons from segmenters are long, ragged and sometimes self-touching;
filling both on one grid (at a reduced scale, ``GRID`` px on the long side) gives their overlap exactly
enough for a 0.5 threshold, with no geometry library. The matching maximises total IoU
(``scipy.optimize.linear_sum_assignment``) and keeps pairs at or above the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw
from scipy.optimize import linear_sum_assignment

Point = tuple[float, float]
#: Long side of the grid the polygons are filled on.
GRID = 1000
MATCH_IOU = 0.5


def polygon_masks(polygons: Sequence[Sequence[Point]], page_size: tuple[int, int]) -> np.ndarray:
    """``(N, h, w)`` boolean masks of ``polygons`` (page pixels) on a grid of ``page_size`` scaled to ``GRID``."""
    scale = GRID / max(page_size)
    w, h = max(1, round(page_size[0] * scale)), max(1, round(page_size[1] * scale))
    masks = np.zeros((len(polygons), h, w), dtype=bool)
    for i, polygon in enumerate(polygons):
        canvas = Image.new("1", (w, h), 0)
        if len(polygon) >= 3:
            ImageDraw.Draw(canvas).polygon([(x * scale, y * scale) for x, y in polygon], fill=1, outline=1)
        masks[i] = np.asarray(canvas, dtype=bool)
    return masks


def iou_matrix(found: Sequence[Sequence[Point]], true: Sequence[Sequence[Point]],
               page_size: tuple[int, int]) -> np.ndarray:
    """``(len(found), len(true))`` intersection over union of every pair."""
    a = polygon_masks(found, page_size).reshape(len(found), -1).astype(np.float32)  # (F, P)
    b = polygon_masks(true, page_size).reshape(len(true), -1).astype(np.float32)  # (T, P)
    inter = a @ b.T  # (F, T)
    union = a.sum(1)[:, None] + b.sum(1)[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


@dataclass(frozen=True)
class Matching:
    """Pairs ``(found index, true index, IoU)`` at IoU >= ``MATCH_IOU``, and what stayed unmatched."""

    pairs: tuple[tuple[int, int, float], ...]
    unmatched_found: tuple[int, ...]
    unmatched_true: tuple[int, ...]


def match_lines(found: Sequence[Sequence[Point]], true: Sequence[Sequence[Point]],
                page_size: tuple[int, int], threshold: float = MATCH_IOU) -> Matching:
    """One-to-one matching of found to true polygons maximising total IoU, pairs below ``threshold`` dropped."""
    if not found or not true:
        return Matching((), tuple(range(len(found))), tuple(range(len(true))))
    iou = iou_matrix(found, true, page_size)
    rows, cols = linear_sum_assignment(-iou)
    pairs = tuple((int(r), int(c), float(iou[r, c])) for r, c in zip(rows, cols) if iou[r, c] >= threshold)
    matched_f, matched_t = {p[0] for p in pairs}, {p[1] for p in pairs}
    return Matching(pairs, tuple(i for i in range(len(found)) if i not in matched_f),
                    tuple(i for i in range(len(true)) if i not in matched_t))


def detection_scores(true_positives: int, found: int, true: int) -> dict[str, float]:
    """Precision, recall and F1 from counts (0 where undefined)."""
    precision = true_positives / found if found else 0.0
    recall = true_positives / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
