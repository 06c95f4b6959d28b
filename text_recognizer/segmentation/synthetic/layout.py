"""Where the lines of a page go, in reading order: columns, paragraphs with indents or blank lines, a
right-aligned header and closing, marginal notes, a lone line, and short lines continued by further crops.

Why a module of its own: the layout decides only positions and sizes in the unrotated page (a
``Placement`` per line); it never touches page pixels, so the ink (``ink.draw_line``) and the truth
follow it whatever it decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

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


@dataclass
class _Planner:
    """One page's layout in progress: the crop stream and generator it draws from, and the lines placed so far.

    Why a class: the header, body, closing and notes steps share the crops, the style and the running
    ``phase`` (the first body baseline, which later columns start level with).
    """

    crops: Iterator[tuple[np.ndarray, float]]
    rng: np.random.Generator
    style: Style
    placements: list[Placement] = field(default_factory=list)
    body: list[int] = field(default_factory=list)  # indices of full lines in the single column, hosts for notes
    phase: float | None = None

    @property
    def h(self) -> float:
        """The page's text height."""
        return self.style.text_height

    @property
    def pitch(self) -> float:
        """Baseline-to-baseline distance."""
        return self.style.spacing * self.style.text_height

    def take(self, x: float, baseline: float | None, limit: float, size: float = 1.0,
             right_align: bool = False, fill: bool = False) -> Placement | None:
        """The next crop scaled to about ``size`` text heights, cut to ``limit`` px, left end at ``x``
        (or right end, when right aligned) and baseline at ``baseline`` (None: first line, under top).
        With ``fill``, crops that fall well short of ``limit`` are continued by the next ones."""
        crops, rng, style = self.crops, self.rng, self.style
        for ink, band in crops:
            height = self.h * size * (1 + rng.uniform(-LINE_SIZE_JITTER, LINE_SIZE_JITTER))
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

    def single_line(self, left: float, right: float) -> tuple[list[Placement], float]:
        """A lone line somewhere down the page (the ``plan`` result of a single-line page)."""
        style, h = self.style, self.h
        span = style.bottom - style.top - 1.5 * h
        baseline = style.top + h + self.rng.uniform(0, max(span, 0))
        line = self.take(left + self.rng.normal(0, 0.2 * h), baseline, right - left, fill=True)
        return ([line] if line else []), baseline

    def column(self, column: int, left: float, right: float) -> bool:
        """Lay out one column: the header (first column), body lines, the closing (last column).

        False when the header found no room: then the page has no more columns either.
        """
        style, rng = self.style, self.rng
        width = right - left
        baseline = None if self.phase is None else self.phase  # columns start level
        if column == 0 and style.header:
            line = self.take(right - rng.uniform(0, 0.05) * width, None, width * rng.uniform(0.12, 0.35),
                             right_align=True)
            if line is None:
                return False
            self.placements.append(line)
            self.phase = line.baseline + self.pitch * (1 + int(rng.random() < 0.6))
            baseline = self.phase
        baseline = self.body_lines(column, left, right, baseline)
        if style.closing and column == len(style.columns) - 1 and baseline is not None:
            line = self.take(right - rng.uniform(0, 0.1) * width, baseline + self.pitch,
                             width * rng.uniform(0.15, 0.35), right_align=True)
            if line is not None:
                self.placements.append(line)
        return True

    def body_lines(self, column: int, left: float, right: float, baseline: float | None) -> float | None:
        """Paragraphs of full lines down the column until the page or the crops run out; returns the next
        baseline (None when no line was placed and none was set)."""
        style, rng, h, pitch = self.style, self.rng, self.h, self.pitch
        new_paragraph = True
        while True:
            if style.closing and column == len(style.columns) - 1 and baseline is not None \
                    and baseline + 3 * pitch > style.bottom:
                break
            last = rng.random() < style.paragraph
            x = left + (style.indent if new_paragraph else 0.0) + rng.normal(0, 0.03 * h)
            limit = (right - x) * (rng.uniform(0.3, 0.85) if last else 1.0)
            jitter = rng.normal(0, 0.03 * h) if style.grid_aligned else 0.0
            line = self.take(x, None if baseline is None else baseline + jitter, limit, fill=True)
            if line is None:
                break
            if self.phase is None:
                self.phase = line.baseline
            if column == 0 and len(style.columns) == 1:
                self.body.append(len(self.placements))
            self.placements.append(line)
            baseline = line.baseline - jitter + pitch * (1 if style.grid_aligned else 1 + rng.normal(0, 0.03))
            new_paragraph = last
            if last and style.blank_lines:
                baseline += pitch
        return baseline

    def notes(self) -> None:
        """Marginal notes, smaller, in the left margin beside a body line; read just before that line."""
        style, rng, h = self.style, self.rng, self.h
        hosts = sorted(rng.permutation(self.body)[:style.notes].tolist()) if self.body else []
        if len(hosts) == 2 and hosts[1] - hosts[0] < 2:
            hosts = hosts[:1]
        margin = style.columns[0][0]
        for host in reversed(hosts):
            size = rng.uniform(0.55, 0.8)
            right = margin - rng.uniform(0.2, 0.5) * h
            edge = 0.1 * style.width if style.holes and not style.holes_right else 0.02 * style.width
            target = self.placements[host]
            line = self.take(right, target.baseline + rng.normal(0, 0.1 * h), (right - edge) * rng.uniform(0.5, 1.0),
                             size, right_align=True)
            if line is not None:
                self.placements.insert(host, line)


def plan(crops: Iterator[tuple[np.ndarray, float]], rng: np.random.Generator,
         style: Style) -> tuple[list[Placement], float]:
    """Where each line goes, in reading order, and the first body baseline (rules align to it)."""
    planner = _Planner(crops, rng, style)
    single_left, single_right = style.columns[0]
    if style.single_line:
        return planner.single_line(single_left, single_right)
    for column, (left, right) in enumerate(style.columns):
        if not planner.column(column, left, right):
            break
    planner.notes()
    return planner.placements, style.top if planner.phase is None else planner.phase
