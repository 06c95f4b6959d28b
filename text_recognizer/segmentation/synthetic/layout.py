"""Where the lines of a page go, in reading order: columns, paragraphs with indents or blank lines, a
right-aligned header and closing, marginal notes, a lone line, and short lines continued by further crops.

Why a module of its own: the layout decides only positions and sizes in the unrotated page (a
``Placement`` per line); it never touches page pixels, so the ink (``ink.draw_line``) and the truth
follow it whatever it decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from text_recognizer.segmentation.synthetic.crops import join, prefix
from text_recognizer.segmentation.synthetic.style import Style

#: Each line's image height varies by this share around the page's text height.
LINE_SIZE_JITTER = 0.06


@dataclass(frozen=True)
class Placement:
    """A line to paste: its inverted crop (original size), band bottom row in it, crop-to-page scale,
    height of one line image on the page (the text height), and where its ink's left end and its
    baseline go in the unrotated page."""

    ink: np.ndarray
    band: float
    scale: float
    height: float
    x: float
    baseline: float


def plan(crops: Iterator[tuple[np.ndarray, float]], rng: np.random.Generator,
         style: Style) -> tuple[list[Placement], float]:
    """Where each line goes, in reading order, and the first body baseline (rules align to it)."""
    h, pitch = style.text_height, style.spacing * style.text_height
    placements: list[Placement] = []

    def take(x: float, baseline: float | None, limit: float, size: float = 1.0,
             right_align: bool = False, fill: bool = False) -> Placement | None:
        """The next crop scaled to about ``size`` text heights, cut to ``limit`` px, left end at ``x``
        (or right end, when right aligned) and baseline at ``baseline`` (None: first line, under top).
        With ``fill``, crops that fall well short of ``limit`` are continued by the next ones."""
        for ink, band in crops:
            height = h * size * (1 + rng.uniform(-LINE_SIZE_JITTER, LINE_SIZE_JITTER))
            scale = height / ink.shape[0]
            rows, target = ink.shape[0], limit * rng.uniform(0.85, 1.0)
            while fill and ink.shape[1] * scale < target and (more := next(crops, None)) is not None:
                ink, band = join(ink, band, rows, *more, gap=round(rows * rng.uniform(0.25, 0.5)))
            ink = prefix(ink, limit / scale)
            if ink is None:
                continue
            if baseline is None:
                baseline = style.top + band * scale + style.curve
            if baseline + (ink.shape[0] - band) * scale + style.curve > style.bottom:
                return None
            left = x - ink.shape[1] * scale if right_align else x
            return Placement(ink, band, scale, height, left, baseline)
        return None

    single_left, single_right = style.columns[0]
    if style.single_line:
        span = style.bottom - style.top - 1.5 * h
        baseline = style.top + h + rng.uniform(0, max(span, 0))
        line = take(single_left + rng.normal(0, 0.2 * h), baseline, single_right - single_left, fill=True)
        return ([line] if line else []), baseline

    phase = None
    body: list[int] = []  # indices of full lines in the single column, hosts for marginal notes
    for column, (left, right) in enumerate(style.columns):
        width = right - left
        baseline = None if phase is None else phase  # columns start level
        new_paragraph = True
        if column == 0 and style.header:
            line = take(right - rng.uniform(0, 0.05) * width, None, width * rng.uniform(0.12, 0.35), right_align=True)
            if line is None:
                break
            placements.append(line)
            phase = line.baseline + pitch * (1 + int(rng.random() < 0.6))
            baseline = phase
        while True:
            if style.closing and column == len(style.columns) - 1 and baseline is not None \
                    and baseline + 3 * pitch > style.bottom:
                break
            last = rng.random() < style.paragraph
            x = left + (style.indent if new_paragraph else 0.0) + rng.normal(0, 0.03 * h)
            limit = (right - x) * (rng.uniform(0.3, 0.85) if last else 1.0)
            jitter = rng.normal(0, 0.03 * h) if style.grid_aligned else 0.0
            line = take(x, None if baseline is None else baseline + jitter, limit, fill=True)
            if line is None:
                break
            if phase is None:
                phase = line.baseline
            if column == 0 and len(style.columns) == 1:
                body.append(len(placements))
            placements.append(line)
            baseline = line.baseline - jitter + pitch * (1 if style.grid_aligned else 1 + rng.normal(0, 0.03))
            new_paragraph = last
            if last and style.blank_lines:
                baseline += pitch
        if style.closing and column == len(style.columns) - 1 and baseline is not None:
            line = take(right - rng.uniform(0, 0.1) * width, baseline + pitch, width * rng.uniform(0.15, 0.35),
                        right_align=True)
            if line is not None:
                placements.append(line)

    # Marginal notes, smaller, in the left margin beside a body line; read just before that line.
    hosts = sorted(rng.permutation(body)[:style.notes].tolist()) if body else []
    if len(hosts) == 2 and hosts[1] - hosts[0] < 2:
        hosts = hosts[:1]
    margin = style.columns[0][0]
    for host in reversed(hosts):
        size = rng.uniform(0.55, 0.8)
        right = margin - rng.uniform(0.2, 0.5) * h
        edge = 0.1 * style.width if style.holes and not style.holes_right else 0.02 * style.width
        target = placements[host]
        line = take(right, target.baseline + rng.normal(0, 0.1 * h), (right - edge) * rng.uniform(0.5, 1.0),
                    size, right_align=True)
        if line is not None:
            placements.insert(host, line)
    return placements, style.top if phase is None else phase
