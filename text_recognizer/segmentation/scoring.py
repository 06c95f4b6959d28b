"""Score found lines against true lines: one-to-one matching at polygon IoU >= 0.5, precision/recall/F1,
and the page CER of their readings (``score_page``).

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

from text_recognizer.metrics import char_edits

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


def inside_shares(polygons: Sequence[Sequence[Point]], regions: Sequence[Sequence[Point]],
                  page_size: tuple[int, int]) -> np.ndarray:
    """``(N,)``: the share of each polygon's area inside the union of ``regions`` (1 where a polygon has no area)."""
    if not len(polygons):
        return np.zeros(0)
    masks = polygon_masks(polygons, page_size)  # (N, h, w)
    union = polygon_masks(regions, page_size).any(0) if len(regions) else np.zeros(masks.shape[1:], dtype=bool)
    areas = masks.reshape(len(masks), -1).sum(1)
    inside = (masks & union).reshape(len(masks), -1).sum(1)
    return np.where(areas > 0, inside / np.maximum(areas, 1), 1.0)


@dataclass(frozen=True)
class PageScore:
    """One page scored: detection counts and, when texts were given, character edits.

    ``found``: found lines that count (all but ``neutral`` and ``ignored``); ``true``: true lines that count;
    ``matched``: found lines matched to a true line that counts; ``neutral``: found lines matched to a true
    line that does not count (a printed letterhead, a line without text); ``ignored``: unmatched found lines
    lying mostly outside every region. ``edits`` / ``characters``: the page CER's numerator and denominator
    (see ``score_page``); 0 / 0 without texts.
    """

    found: int
    true: int
    matched: int
    neutral: int
    ignored: int
    edits: int = 0
    characters: int = 0
    matching: Matching | None = None

    @property
    def cer(self) -> float:
        return self.edits / self.characters if self.characters else float(self.edits > 0)


def score_page(found: Sequence[Sequence[Point]], true: Sequence[Sequence[Point]], page_size: tuple[int, int],
               counted: Sequence[bool] | None = None, regions: Sequence[Sequence[Point]] = (),
               found_texts: Sequence[str] | None = None, true_texts: Sequence[str] | None = None,
               outside_share: float = 0.5, threshold: float = MATCH_IOU) -> PageScore:
    """Score the ``found`` line polygons of a page against its ``true`` ones (both in page pixels).

    Every found line is matched one-to-one against *every* true line (``match_lines``), then:

    - a true line counts unless ``counted`` says no (a printed or typed line on a handwritten page, a line
      the transcribers left empty); a found line matched to one that does not count is neither right nor
      wrong (``neutral``);
    - with ``regions`` (the page's text block polygons), an unmatched found line with less than
      ``outside_share`` of its area inside them is ignored: it found something the transcribers left out
      (a printed notice, a page number), not a false line.

    With ``found_texts`` and ``true_texts`` (the readings of the found lines and the true transcriptions, in
    the form they are compared in), ``edits`` is the page CER's numerator: the edit distance of each matched
    pair, plus every character of the counted true lines left unmatched (deleted) and of the readings of the
    found lines that count and are unmatched (inserted); ``characters``, its denominator, is the number of
    characters of the counted true lines.
    """
    counted = [True] * len(true) if counted is None else list(counted)
    if len(counted) != len(true):
        raise ValueError(f"counted has {len(counted)} flags for {len(true)} true lines")
    matching = match_lines(found, true, page_size, threshold)
    matched = [(f, t) for f, t, _ in matching.pairs if counted[t]]
    neutral = len(matching.pairs) - len(matched)
    unmatched_found = list(matching.unmatched_found)
    ignored: list[int] = []
    if len(regions) and unmatched_found:
        shares = inside_shares([found[i] for i in unmatched_found], regions, page_size)
        ignored = [i for i, share in zip(unmatched_found, shares) if share < outside_share]
    false_found = [i for i in unmatched_found if i not in set(ignored)]
    score = PageScore(found=len(found) - neutral - len(ignored), true=sum(counted), matched=len(matched),
                      neutral=neutral, ignored=len(ignored), matching=matching)
    if found_texts is None or true_texts is None:
        return score
    if len(found_texts) != len(found) or len(true_texts) != len(true):
        raise ValueError(f"got {len(found_texts)} found texts for {len(found)} lines and {len(true_texts)} "
                         f"true texts for {len(true)} lines")
    edits = sum(char_edits(true_texts[t], found_texts[f]) for f, t in matched)
    edits += sum(len(true_texts[t]) for t in matching.unmatched_true if counted[t])
    edits += sum(len(found_texts[f]) for f in false_found)
    characters = sum(len(text) for text, counts in zip(true_texts, counted) if counts)
    return PageScore(score.found, score.true, score.matched, score.neutral, score.ignored, edits, characters, matching)
