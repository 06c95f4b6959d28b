"""The page style: everything about a page's layout and looks that is drawn once per page.

Why a module of its own: the style is the one place where the page's randomness is decided (sizes,
spacing, columns, margins, paper, rules, weave, ink, degradations), and the layout, the ink and the
paper only read it. A test fixes one feature with ``dataclasses.replace`` and leaves the rest drawn.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

#: Page width (px) and height / width, drawn per page.
PAGE_WIDTH, ASPECT = (1000, 2000), (1.25, 1.5)
#: Line image height on the page (px), drawn per page.
TEXT_HEIGHT = (40.0, 110.0)
#: Line pitch in text heights.
SPACING = (1.0, 2.0)
#: Most rotation of the page, and most extra tilt of one line, in degrees.
PAGE_ANGLE, LINE_ANGLE = 5.0, 1.5
#: Share of pages on woven (linen) or laid paper.
WEAVE = 0.15
#: Thread pitch of woven or laid paper, px per 1000 px of page width.
WEAVE_PITCH = (2.5, 5.0)
#: The top margin a printed letterhead (``marks.letterhead``) takes, as a share of the page height. How many pages
#: get one is the caller's ``letterheads`` (none by default, so that pages drawn before letterheads existed are
#: drawn the same; recipe stage ``segmenter-letterheads`` used 0.3).
LETTERHEAD_BAND = (0.1, 0.2)


@dataclass(frozen=True)
class Style:
    """Everything drawn once per page. Lengths are page pixels in the unrotated frame; colours 0-1 RGB."""

    width: int
    height: int
    rgb: bool
    text_height: float
    spacing: float
    angle: float                # page rotation, degrees
    line_angle: float           # most extra tilt of a line, degrees
    curve: float                # most vertical bend of a line, px (0: straight)
    columns: tuple[tuple[float, float], ...]  # (left, right) of each column
    top: float                  # first line's image top
    bottom: float               # no line image reaches below
    indent: float               # first line of a paragraph, px
    paragraph: float            # chance that a line ends its paragraph
    blank_lines: bool           # a blank line between paragraphs
    header: bool                # a short right-aligned line first (date, place)
    closing: bool               # a short right-aligned line last (signature)
    notes: int                  # marginal notes in the left margin
    single_line: bool
    paper: tuple[float, float, float]
    lighting: float             # strength of the smooth light gradient and vignette
    texture: float              # paper texture, std of a multiplicative noise
    weave: str                  # "", "linen" (crosshatched threads) or "laid" (fine ribs and chain lines)
    weave_pitch: float          # thread period, px
    weave_strength: float       # how much the gaps between threads darken the paper (0-1)
    grid: str                   # "", "ruled", "squared" or "seyes"
    grid_aligned: bool          # baselines sit on the rules
    grid_pitch: float
    grid_colour: tuple[float, float, float]
    grid_strength: float
    margin_rule: bool           # a red vertical rule left of the text
    bleed: float                # opacity of the mirrored ink from the other side (0: none)
    stamp: str                  # "", "ring", "box", "logo" or "barcode"
    letterhead: bool            # printed text in the band above ``top``
    holes: int                  # punch holes (0, 2 or 4)
    holes_right: bool
    holes_dark: bool
    ink: tuple[float, float, float]
    opacity: float
    pencil: bool
    blur: float                 # Gaussian sigma of the ink, px
    noise: float                # std of the pixel noise, grey levels
    jpeg: int                   # re-compression quality (0: none)


def draw_style(rng: np.random.Generator, page_width: int | None = None, letterheads: float = 0.0) -> Style:
    """One page's layout and looks; ``letterheads``: the share of pages under a printed letterhead."""
    width = int(page_width) if page_width is not None else int(rng.integers(PAGE_WIDTH[0], PAGE_WIDTH[1] + 1))
    height = round(width * rng.uniform(*ASPECT))
    h = rng.uniform(*TEXT_HEIGHT) * min(1.0, width / PAGE_WIDTH[0])
    angle = rng.uniform(-PAGE_ANGLE, PAGE_ANGLE) if rng.random() < 0.6 else rng.uniform(-1.0, 1.0)
    spacing = rng.uniform(*SPACING)
    grid = str(rng.choice(["", "ruled", "squared", "seyes"], p=[0.35, 0.35, 0.15, 0.15]))
    aligned = bool(grid) and rng.random() < 0.6
    pitch = spacing * h
    grid_pitch = {"": pitch, "ruled": pitch if aligned else h * rng.uniform(0.9, 1.8),
                  "squared": pitch / max(1, round(pitch / (0.6 * h))) if aligned else h * rng.uniform(0.4, 0.8),
                  "seyes": pitch / 4 if aligned else h * rng.uniform(0.25, 0.4)}[grid]
    holes = int(rng.choice([0, 2, 4], p=[0.8, 0.15, 0.05]))
    holes_right = rng.random() < 0.3
    single = rng.random() < 0.05
    notes = int(rng.integers(1, 3)) if rng.random() < 0.2 and not single else 0
    two_columns = rng.random() < 0.1 and not notes and not single

    # Margins: wide enough that the page rotation keeps the text on the page, and the holes clear of it.
    sin = abs(math.sin(math.radians(angle)))
    safe_x, safe_y = sin * height / 2 + 0.01 * width, sin * width / 2 + 0.01 * height
    left = max(safe_x, width * rng.uniform(0.05, 0.15))
    right = max(safe_x, width * rng.uniform(0.03, 0.08))
    if notes:
        left = max(left, width * rng.uniform(0.2, 0.3))
    if holes:
        clear = 0.08 * width
        left, right = (left, max(right, clear)) if holes_right else (max(left, clear), right)
    top = max(safe_y, height * rng.uniform(0.03, 0.1))
    bottom = height - max(safe_y, height * rng.uniform(0.03, 0.08))
    if rng.random() < 0.2:
        bottom = top + (bottom - top) * rng.uniform(0.3, 1.0)  # a page left partly empty
    columns = ((left, width - right),)
    if two_columns:
        gutter = width * rng.uniform(0.03, 0.08)
        middle = (left + width - right) / 2
        if middle - gutter / 2 - left >= 6 * h:
            columns = ((left, middle - gutter / 2), (middle + gutter / 2, width - right))

    tones = {"white": (1.0, 1.0, 1.0), "yellow": (1.0, 0.96, 0.86), "grey": (0.9, 0.9, 0.9),
             "blue": (0.93, 0.96, 1.0)}
    tone = np.array(tones[str(rng.choice(list(tones)))]) * rng.uniform(0.85, 1.0)
    tone = np.clip(tone + rng.normal(0, 0.02, 3), 0, 1)
    texture = rng.uniform(0.0, 0.04)
    weave = str(rng.choice(["linen", "laid"])) if rng.random() < WEAVE else ""
    if weave and rng.random() < 0.5:  # a slight grain over the threads
        texture = max(texture, rng.uniform(0.02, 0.04))
    inks = {"black": (0.08, 0.08, 0.1), "blue": (0.1, 0.15, 0.45), "brown": (0.3, 0.2, 0.12),
            "pencil": (0.45, 0.45, 0.47)}
    ink_name = str(rng.choice(list(inks), p=[0.35, 0.35, 0.15, 0.15]))
    ink = np.clip(np.array(inks[ink_name]) + rng.normal(0, 0.03, 3), 0, 1)
    grid_colour = (np.array((0.55, 0.7, 0.9)) if rng.random() < 0.7 else np.full(3, 0.65)) + rng.normal(0, 0.04, 3)
    style = Style(
        width=width, height=height, rgb=rng.random() < 0.5, text_height=h, spacing=spacing, angle=angle,
        line_angle=LINE_ANGLE * rng.uniform(0.0, 0.3 if aligned else 1.0),
        curve=0.08 * h if rng.random() < 0.4 else 0.0,
        columns=columns, top=top, bottom=bottom,
        indent=h * rng.uniform(0.5, 3.0) if rng.random() < 0.5 else 0.0,
        paragraph=rng.uniform(0.05, 0.25) if rng.random() < 0.7 else 0.0,
        blank_lines=rng.random() < 0.4, header=rng.random() < 0.25, closing=rng.random() < 0.15,
        notes=notes, single_line=single, paper=tuple(tone),
        lighting=rng.uniform(0.0, 0.3) if rng.random() < 0.6 else 0.0, texture=texture,
        weave=weave, weave_pitch=width / 1000 * rng.uniform(*WEAVE_PITCH), weave_strength=rng.uniform(0.015, 0.04),
        grid=grid, grid_aligned=aligned, grid_pitch=float(grid_pitch),
        grid_colour=tuple(np.clip(grid_colour, 0, 1)), grid_strength=rng.uniform(0.3, 0.9),
        margin_rule=bool(grid) and rng.random() < 0.4, bleed=rng.uniform(0.05, 0.2) if rng.random() < 0.2 else 0.0,
        stamp=str(rng.choice(["ring", "box", "logo", "barcode"])) if rng.random() < 0.15 else "",
        holes=holes, holes_right=holes_right, holes_dark=rng.random() < 0.5,
        ink=tuple(ink), opacity=rng.uniform(0.6, 0.85) if ink_name == "pencil" else rng.uniform(0.75, 1.0),
        pencil=ink_name == "pencil", blur=rng.uniform(0.3, 1.0), noise=rng.uniform(1.0, 6.0),
        jpeg=int(rng.integers(40, 91)) if rng.random() < 0.3 else 0, letterhead=False)
    # Drawn last and only when asked for, so that pages drawn without letterheads are the pages drawn before.
    if letterheads > 0 and rng.random() < letterheads and not single:
        band_top = max(top, height * rng.uniform(*LETTERHEAD_BAND))
        if bottom - band_top >= 4 * h:
            style = dataclasses.replace(style, top=band_top, letterhead=True)
    return style
