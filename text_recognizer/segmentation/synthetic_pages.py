"""Synthetic handwritten pages composed from real line images, with each line's true polygon and baseline.

Why: a learned line segmenter needs many pages, and the real training pages are few and alike (a couple
of hundred scans of ruled French paper). Pasting real line crops (e.g. IAM lines) onto drawn paper
teaches the layouts those pages lack: text from small to large, lines from touching to double spaced,
paragraphs with indents or blank lines, a right-aligned date, marginal notes, two columns, a lone line,
skewed and gently curved lines, and paper that is tinted, unevenly lit, ruled, squared, bled through,
stamped or punched.

The truth follows the kraken/eScriptorium convention of the real pages, and is measured on the very
pixels that are pasted, so it cannot drift from the ink:

- polygon: the line's ink envelope. The curved line crop is cut into x bins about one text
  height wide; each bin gives its top-most and bottom-most ink row (ink above ``INK_LEVEL``); the
  polygon runs along the upper envelope left to right and back along the lower one, padded by
  ``PADDING`` text heights. Between bins it takes the outer of the two neighbours, so no ink of a bin
  falls outside.
- baseline: the lower edge of the dense ink band, the row under the row-wise ink density peak where the
  density falls below ``BAND_LEVEL`` of that peak, found once per line image (a straight line in the
  crop's frame) and then carried through the crop's curve, one point per bin, spanning the ink, and
  kept inside the polygon.

Both are mapped to the page by the same map that places the ink (the crop's scale, the line's own tilt,
then the page's rotation about its centre), so a point of the ink and of the truth land together.

Speed, because pages are made on the fly during training: the per-line work (curving, blurring, one
affine resampling) runs on each line's crop, and the full page sees only a handful of 8-bit PIL
passes. Blurring the ink alone stands for blurring the page (the paper under it is smooth already);
the pixel noise goes into the light before the ink; light, texture and bleed-through are drawn at a
quarter of the size and enlarged; rules are copied from a 1-D profile.
"""

from __future__ import annotations

import io
import math
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFilter

Point = tuple[float, float]

#: A crop pixel is ink where its inverted grey value is above this share of full ink.
INK_LEVEL = 0.3
#: The baseline is where the row-wise ink density falls under this share of its peak.
BAND_LEVEL = 0.3
#: Envelope bin width and polygon padding, in text heights (line image heights on the page).
BIN_WIDTH, PADDING = 1.0, 0.1
#: Page width (px) and height / width, drawn per page.
PAGE_WIDTH, ASPECT = (1000, 2000), (1.25, 1.5)
#: Line image height on the page (px), drawn per page; each line varies by ``LINE_SIZE_JITTER`` more.
TEXT_HEIGHT, LINE_SIZE_JITTER = (40.0, 110.0), 0.06
#: Line pitch in text heights.
SPACING = (1.0, 2.0)
#: Most rotation of the page, and most extra tilt of one line, in degrees.
PAGE_ANGLE, LINE_ANGLE = 5.0, 1.5
#: A run of empty columns this many crop heights wide separates two words (lines are cut there).
WORD_GAP = 0.15

_INK = 255 * INK_LEVEL


@dataclass(frozen=True)
class SyntheticLine:
    """One placed line: its ink envelope polygon (closed ring implied) and baseline (left to right),
    in page pixels."""

    polygon: tuple[Point, ...]
    baseline: tuple[Point, ...]


@dataclass(frozen=True)
class SyntheticPage:
    """A composed page (mode ``"L"`` or ``"RGB"``) and its lines in reading order."""

    image: Image.Image
    lines: tuple[SyntheticLine, ...]


@dataclass(frozen=True)
class _Style:
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
    grid: str                   # "", "ruled", "squared" or "seyes"
    grid_aligned: bool          # baselines sit on the rules
    grid_pitch: float
    grid_colour: tuple[float, float, float]
    grid_strength: float
    margin_rule: bool           # a red vertical rule left of the text
    bleed: float                # opacity of the mirrored ink from the other side (0: none)
    stamp: str                  # "", "ring", "box", "logo" or "barcode"
    holes: int                  # punch holes (0, 2 or 4)
    holes_right: bool
    holes_dark: bool
    ink: tuple[float, float, float]
    opacity: float
    pencil: bool
    blur: float                 # Gaussian sigma of the ink, px
    noise: float                # std of the pixel noise, grey levels
    jpeg: int                   # re-compression quality (0: none)


@dataclass(frozen=True)
class _Placement:
    """A line to paste: its inverted crop (original size), band bottom row in it, crop-to-page scale,
    height of one line image on the page (the text height), and where its ink's left end and its
    baseline go in the unrotated page."""

    ink: np.ndarray
    band: float
    scale: float
    height: float
    x: float
    baseline: float


def compose_page(line_images: Sequence[Image.Image], rng: np.random.Generator, *,
                 page_width: int | None = None) -> SyntheticPage:
    """A page made of as many of ``line_images`` (grey crops, dark ink on white) as fit, in order.

    Layout, paper, ink and degradations are drawn from ``rng``; the same generator state gives the same
    page. ``page_width`` fixes the width in pixels (the height follows from a drawn aspect ratio).
    Crops that are all white are skipped; a crop that runs past its column is cut at a word gap, and
    one that falls well short of it is continued by the next crops (small text on a wide page can take
    three crops a line, so pass plenty: a page holds up to about 60 lines).
    """
    if page_width is not None and (not isinstance(page_width, numbers.Integral) or page_width < 64):
        raise ValueError(f"page_width must be an int >= 64 or None, got {page_width!r}")
    style = _draw_style(rng, page_width)
    return _render(line_images, rng, style)[0]


def _draw_style(rng: np.random.Generator, page_width: int | None = None) -> _Style:
    """One page's layout and looks."""
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
    inks = {"black": (0.08, 0.08, 0.1), "blue": (0.1, 0.15, 0.45), "brown": (0.3, 0.2, 0.12),
            "pencil": (0.45, 0.45, 0.47)}
    ink_name = str(rng.choice(list(inks), p=[0.35, 0.35, 0.15, 0.15]))
    ink = np.clip(np.array(inks[ink_name]) + rng.normal(0, 0.03, 3), 0, 1)
    grid_colour = (np.array((0.55, 0.7, 0.9)) if rng.random() < 0.7 else np.full(3, 0.65)) + rng.normal(0, 0.04, 3)
    return _Style(
        width=width, height=height, rgb=rng.random() < 0.5, text_height=h, spacing=spacing, angle=angle,
        line_angle=LINE_ANGLE * rng.uniform(0.0, 0.3 if aligned else 1.0),
        curve=0.08 * h if rng.random() < 0.4 else 0.0,
        columns=columns, top=top, bottom=bottom,
        indent=h * rng.uniform(0.5, 3.0) if rng.random() < 0.5 else 0.0,
        paragraph=rng.uniform(0.05, 0.25) if rng.random() < 0.7 else 0.0,
        blank_lines=rng.random() < 0.4, header=rng.random() < 0.25, closing=rng.random() < 0.15,
        notes=notes, single_line=single, paper=tuple(tone),
        lighting=rng.uniform(0.0, 0.3) if rng.random() < 0.6 else 0.0, texture=rng.uniform(0.0, 0.04),
        grid=grid, grid_aligned=aligned, grid_pitch=float(grid_pitch),
        grid_colour=tuple(np.clip(grid_colour, 0, 1)), grid_strength=rng.uniform(0.3, 0.9),
        margin_rule=bool(grid) and rng.random() < 0.4, bleed=rng.uniform(0.05, 0.2) if rng.random() < 0.2 else 0.0,
        stamp=str(rng.choice(["ring", "box", "logo", "barcode"])) if rng.random() < 0.15 else "",
        holes=holes, holes_right=holes_right, holes_dark=rng.random() < 0.5,
        ink=tuple(ink), opacity=rng.uniform(0.6, 0.85) if ink_name == "pencil" else rng.uniform(0.75, 1.0),
        pencil=ink_name == "pencil", blur=rng.uniform(0.3, 1.0), noise=rng.uniform(1.0, 6.0),
        jpeg=int(rng.integers(40, 91)) if rng.random() < 0.3 else 0)


def _render(line_images: Sequence[Image.Image], rng: np.random.Generator,
            style: _Style) -> tuple[SyntheticPage, np.ndarray]:
    """The page for ``style``, and the ink of its lines alone (``(H, W)`` uint8, 255: full ink; for tests)."""
    placements, phase = _plan(_crops(line_images), rng, style)
    canvas = np.zeros((style.height, style.width), np.uint8)  # the lines' ink, 255: full ink
    lines = [line for p in placements if (line := _draw_line(canvas, p, style, rng)) is not None]
    image = _finish(canvas, style, phase, rng)
    return SyntheticPage(image, tuple(lines)), canvas


# ---------------------------------------------------------------------------------------------- layout

def _crops(line_images: Sequence[Image.Image]) -> Iterator[tuple[np.ndarray, float]]:
    """Each line image inverted (ink high, uint8) and trimmed to its ink columns, with its band bottom;
    all-white images are skipped."""
    for image in line_images:
        ink = 255 - np.asarray(image.convert("L"), dtype=np.uint8)
        columns = np.flatnonzero((ink > _INK).any(axis=0))
        if columns.size:
            yield ink[:, columns[0]:columns[-1] + 1], _band_bottom(ink)


def _band_bottom(ink: np.ndarray) -> float:
    """Row (crop pixels, a row edge) under which the row-wise ink density stays below ``BAND_LEVEL`` of
    its peak: the feet of the letters, i.e. the baseline."""
    density = (ink > _INK).mean(axis=1)
    peak = int(np.argmax(density))
    below = np.flatnonzero(density[peak:] < BAND_LEVEL * density[peak])
    return float(peak + below[0]) if below.size else float(len(density))


def _prefix(ink: np.ndarray, limit: float) -> np.ndarray | None:
    """The longest start of ``ink`` no wider than ``limit`` columns that ends at a word gap (a hard cut
    inside the first word when even that is too wide); None when under one column is left."""
    if ink.shape[1] <= limit:
        return ink
    if limit < 1:
        return None
    empty = np.concatenate([[0], ~(ink > _INK).any(axis=0), [0]]).astype(np.int8)
    edges = np.diff(empty)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    fits = (ends - starts >= WORD_GAP * ink.shape[0]) & (starts <= limit)
    cut = int(starts[fits].max()) if fits.any() else int(limit)
    columns = np.flatnonzero((ink[:, :cut] > _INK).any(axis=0))
    return ink[:, :columns[-1] + 1] if columns.size else None


def _join(ink: np.ndarray, band: float, rows: int, other: np.ndarray, other_band: float,
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


def _plan(crops: Iterator[tuple[np.ndarray, float]], rng: np.random.Generator,
          style: _Style) -> tuple[list[_Placement], float]:
    """Where each line goes, in reading order, and the first body baseline (rules align to it)."""
    h, pitch = style.text_height, style.spacing * style.text_height
    placements: list[_Placement] = []

    def take(x: float, baseline: float | None, limit: float, size: float = 1.0,
             right_align: bool = False, fill: bool = False) -> _Placement | None:
        """The next crop scaled to about ``size`` text heights, cut to ``limit`` px, left end at ``x``
        (or right end, when right aligned) and baseline at ``baseline`` (None: first line, under top).
        With ``fill``, crops that fall well short of ``limit`` are continued by the next ones."""
        for ink, band in crops:
            height = h * size * (1 + rng.uniform(-LINE_SIZE_JITTER, LINE_SIZE_JITTER))
            scale = height / ink.shape[0]
            rows, target = ink.shape[0], limit * rng.uniform(0.85, 1.0)
            while fill and ink.shape[1] * scale < target and (more := next(crops, None)) is not None:
                ink, band = _join(ink, band, rows, *more, gap=round(rows * rng.uniform(0.25, 0.5)))
            ink = _prefix(ink, limit / scale)
            if ink is None:
                continue
            if baseline is None:
                baseline = style.top + band * scale + style.curve
            if baseline + (ink.shape[0] - band) * scale + style.curve > style.bottom:
                return None
            left = x - ink.shape[1] * scale if right_align else x
            return _Placement(ink, band, scale, height, left, baseline)
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


# ----------------------------------------------------------------------------------------------- lines

def _draw_line(canvas: np.ndarray, p: _Placement, style: _Style, rng: np.random.Generator) -> SyntheticLine | None:
    """Paste one line's ink into ``canvas`` (max) and return its polygon and baseline on the page; None
    when it lands off the page.

    The crop is bent and blurred at its own size (or first shrunk to the page's, when it is to be made
    smaller) and then scaled, turned and moved onto the page by one affine resampling; its envelope and
    baseline are found in the same pixels and carried by the same map.
    """
    ink, band = p.ink, p.band
    kx = ky = p.scale  # crop px -> page px, along x and y
    if p.scale < 0.9:  # work on as few pixels as the page needs; PIL's resize filters as it shrinks
        size = (max(1, round(ink.shape[1] * p.scale)), max(1, round(ink.shape[0] * p.scale)))
        kx, ky = p.scale * ink.shape[1] / size[0], p.scale * ink.shape[0] / size[1]
        band *= size[1] / ink.shape[0]
        ink = np.asarray(Image.fromarray(ink).resize(size, Image.Resampling.BILINEAR))
    h0, w0 = ink.shape

    # Bend: every column moves down by a few page px (a sine or a parabola along x).
    shift = np.zeros(w0, dtype=np.int64)
    if style.curve > 0:
        x = np.arange(w0) / w0
        if rng.random() < 0.5:
            wave = np.sin(2 * np.pi * (x * rng.uniform(0.3, 1.2) + rng.random()))
        else:
            wave = 2 * (2 * x - 1) ** 2 - 1
        shift = np.rint(rng.uniform(-1, 1) * style.curve / ky * wave).astype(np.int64)
    pad = int(np.abs(shift).max()) + 2  # 2 px of room all round for the blur
    curved = np.zeros((h0 + 2 * pad, w0 + 4), np.uint8)
    if style.curve > 0:
        curved[np.arange(h0)[:, None] + pad + shift[None, :], np.arange(w0)[None, :] + 2] = ink
    else:
        curved[pad:pad + h0, 2:2 + w0] = ink

    geometry = _envelope(curved, p.height / ky)
    if geometry is None:
        return None
    polygon, stops, (high, low) = geometry
    levels = pad + band + shift[np.clip(stops.astype(np.int64) - 2, 0, w0 - 1)]
    baseline = np.stack([stops, np.clip(levels, high, low)], axis=1)

    # The blur is meant in page px; blurring before enlarging keeps it the same.
    patch = Image.fromarray(curved).filter(_blur_kernel(min(1.0, style.blur / ky)))
    opacity = min(1.0, style.opacity * rng.uniform(0.9, 1.1))

    # Rigid motion: the line tilts about its own centre, then the page turns about its centre.
    tilt = style.line_angle * rng.uniform(-1, 1)
    tilt = math.copysign(min(abs(tilt), math.degrees(math.atan(0.5 * p.height / (kx * w0)))), tilt)
    page_turn, turn = _rotation(style.angle), _rotation(style.angle + tilt)
    scale = np.diag([kx, ky])
    matrix = turn @ scale
    centre_page = np.array([style.width / 2, style.height / 2])
    centre_line = scale @ np.array([curved.shape[1] / 2, curved.shape[0] / 2])
    origin = np.array([p.x - 2 * kx, p.baseline - (pad + band) * ky])
    move = centre_page + page_turn @ (origin + centre_line - centre_page) - turn @ centre_line
    if not _paste(canvas, np.asarray(patch), opacity, matrix, move):
        return None

    def to_page(points: np.ndarray) -> tuple[Point, ...]:
        points = points @ matrix.T + move
        points[:, 0] = np.clip(points[:, 0], 0, style.width - 1)
        points[:, 1] = np.clip(points[:, 1], 0, style.height - 1)
        return tuple(map(tuple, points.tolist()))

    return SyntheticLine(to_page(polygon), to_page(baseline))


def _blur_kernel(sigma: float) -> ImageFilter.Kernel:
    """A 3x3 Gaussian of ``sigma`` px: the slight blur of a scan, at a third of the cost of PIL's
    ``GaussianBlur`` (sigma <= 1 hardly reaches past one pixel)."""
    taps = np.exp(-np.array([1.0, 0.0, 1.0]) / (2 * sigma**2))
    kernel = np.outer(taps, taps)
    return ImageFilter.Kernel((3, 3), (kernel / kernel.sum()).ravel().tolist(), scale=1)


def _rotation(degrees: float) -> np.ndarray:
    """2x2 rotation by ``degrees`` in page coordinates (y down)."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, -s], [s, c]])


def _envelope(ink: np.ndarray, text_height: float
              ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]] | None:
    """Padded ink envelope polygon of a line crop (its own pixels, ``(N, 2)``), the x stops of its
    baseline (the ink's ends and the bin centres) and the polygon's upper and lower edge at each stop
    (a baseline point is kept between them; -inf and inf where a bin has no ink); None when the crop
    has no ink.

    The clamp matters where a bin's ink ends above the band of the whole line (a short crop of high
    letters, an apostrophe at the end): the baseline there stays inside the polygon, as in a
    kraken/eScriptorium transcription."""
    mask = ink > _INK
    columns = mask.any(axis=0)
    ink_columns = np.flatnonzero(columns)
    if not ink_columns.size:
        return None
    x0, x1 = int(ink_columns[0]), int(ink_columns[-1]) + 1
    rows = mask.shape[0]
    bins = max(1, round((x1 - x0) / (BIN_WIDTH * text_height)))
    edges = np.unique(np.linspace(0, x1 - x0, bins + 1).round().astype(np.int64))
    inked = np.logical_or.reduceat(mask[:, x0:x1], edges[:-1], axis=1)  # (rows, bins): ink in that row of the bin
    has = inked.any(axis=0)
    top = np.where(has, np.argmax(inked, axis=0), np.inf)
    bottom = np.where(has, rows - np.argmax(inked[::-1], axis=0), -np.inf)
    centres = x0 + (edges[:-1] + edges[1:]) / 2
    pad = PADDING * text_height

    def side(level: np.ndarray, outer) -> np.ndarray:
        """``(n, 2)`` points along one envelope, left to right: the bin centres at their own level,
        the edges between bins at the outer of the two neighbours (``outer`` is ``np.minimum`` for the
        top, whose empty bins are inf, ``np.maximum`` for the bottom, -inf), none for empty bins."""
        points = np.empty((2 * len(centres) - 1, 2))
        points[0::2, 0], points[0::2, 1] = centres, level
        points[1::2, 0], points[1::2, 1] = x0 + edges[1:-1], outer(level[:-1], level[1:])
        ends = np.array([[x0 - pad, level[0]], [x1 + pad, level[-1]]])
        return np.concatenate([ends[:1], points[np.isfinite(points[:, 1])], ends[1:]])

    upper, lower = side(top, np.minimum), side(bottom, np.maximum)
    polygon = np.concatenate([upper - (0, pad), lower[::-1] + (0, pad)])
    stops = np.concatenate([[x0], centres, [x1]]).astype(np.float64)
    high = np.concatenate([top[:1], top, top[-1:]]) - pad
    low = np.concatenate([bottom[:1], bottom, bottom[-1:]]) + pad
    return polygon, stops, (np.where(np.isfinite(high), high, -np.inf), np.where(np.isfinite(low), low, np.inf))


def _paste(canvas: np.ndarray, patch: np.ndarray, opacity: float, matrix: np.ndarray, move: np.ndarray) -> bool:
    """Max ``patch`` (times ``opacity``) into ``canvas`` where it lands when its point ``u`` goes to
    ``matrix @ u + move`` (a rotation after a scaling); False when nothing of it lands on the canvas.

    A long line turned by a few degrees has a tall bounding box that is mostly empty, so the patch is
    turned into the boxes of pieces a few line heights long (each box is nearly all line). Every box
    samples the whole patch with the same transform, so where boxes overlap they hold the same values.
    """
    h, w = patch.shape
    (a, b), (c, d) = np.linalg.inv(matrix)  # page -> patch
    image = Image.fromarray(patch)
    # pieces about as long as the turn lifts by half a patch height (one piece for a level line)
    step = max(64, 3 * h, int(0.5 * h * abs(matrix[0, 0] / matrix[1, 0])) if matrix[1, 0] else w)
    landed = False
    for lo in range(0, w, step):
        hi = min(w, lo + step)
        corners = np.array([[lo, 0], [hi, 0], [lo, h], [hi, h]], dtype=np.float64) @ matrix.T + move
        x0, y0 = (max(0, math.floor(v)) for v in corners.min(axis=0))
        x1 = min(canvas.shape[1], math.ceil(corners[:, 0].max()))
        y1 = min(canvas.shape[0], math.ceil(corners[:, 1].max()))
        if x1 <= x0 or y1 <= y0:
            continue
        dx, dy = x0 - move[0], y0 - move[1]
        inverse = (a, b, a * dx + b * dy, c, d, c * dx + d * dy)  # output pixel -> patch pixel
        moved = np.asarray(image.transform((x1 - x0, y1 - y0), Image.Transform.AFFINE, inverse,
                                           resample=Image.Resampling.BILINEAR))
        if opacity < 1:
            moved = (moved * opacity).astype(np.uint8)
        np.maximum(canvas[y0:y1, x0:x1], moved, out=canvas[y0:y1, x0:x1])
        landed = True
    return landed


# ----------------------------------------------------------------------------------------------- paper
# The page is put together as 8-bit PIL images: a multiply (``ImageChops.multiply``), a 256-entry lookup
# (``Image.point``) or an add is one fast C pass over the page, where float arrays would need several.

def _lut(f) -> list[int]:
    """A 256-entry lookup table of ``f(v)`` for v = 0..255, rounded and clipped to 0..255."""
    return np.clip(np.rint(f(np.arange(256, dtype=np.float64))), 0, 255).astype(np.uint8).tolist()


def _darken(plane: Image.Image, cover: Image.Image, amount: float,
            box: tuple[int, int, int, int] | None = None) -> Image.Image:
    """``plane`` times ``1 - amount * cover / 255`` (within ``box`` only, when given)."""
    term = cover.point(_lut(lambda v: 255 - amount * v))
    if box is None:
        return ImageChops.multiply(plane, term)
    plane.paste(ImageChops.multiply(plane.crop(box), term), box[:2])
    return plane


def _finish(canvas: np.ndarray, style: _Style, phase: float, rng: np.random.Generator) -> Image.Image:
    """Paper (tone, light, texture, pixel noise, rules, bleed-through, stamp) darkened by the ink, then
    punch holes and JPEG.

    The pixel noise goes into the light field, before the ink and the channels: one pass instead of
    one per channel, and it then scales with the light like a camera's shot noise."""
    H, W = canvas.shape
    ink = Image.fromarray(canvas)
    if style.pencil:  # graphite leaves grain: up to half the ink is missing, pixel by pixel
        grain = Image.frombytes("L", (W, H), rng.bytes(H * W)).point(_lut(lambda v: 255 - v / 2))
        ink = ImageChops.multiply(ink, grain)
    spread = style.noise * math.sqrt(3)  # uniform noise on [-spread, spread] has std ``style.noise``
    field = _light(canvas, style, rng, headroom=math.ceil(spread))
    noise = Image.frombytes("L", (W, H), rng.bytes(H * W)).point(_lut(lambda v: v / 255 * 2 * spread))
    field = ImageChops.add(field, noise, 1.0, -round(spread))
    rules = _rules(style, phase)
    margin = _margin_rule(style) if style.margin_rule else None
    stamp = _stamp(style, rng) if style.stamp else None
    holes = _holes(style, rng) if style.holes else []

    colours = np.array([style.paper, style.grid_colour, style.ink, (0.8, 0.2, 0.25)])
    if not style.rgb:
        colours = colours @ np.array([[0.299], [0.587], [0.114]])
    planes = []
    for channel in range(colours.shape[1]):
        paper, rule, dark, red = colours[:, channel]
        plane = field if rules is None else _darken(field, rules, style.grid_strength * (1 - rule))
        if margin is not None:
            plane = _darken(plane, margin[1], 0.8 * (1 - red), margin[0])
        if stamp is not None:
            box, cover, colour = stamp
            plane = _darken(plane, cover, 1 - float(colour[channel] if style.rgb else colour @ (0.299, 0.587, 0.114)),
                            box)
        # The paper's tone rides on the ink's lookup table: one pass less per channel.
        plane = ImageChops.multiply(plane, ink.point(_lut(lambda v, p=paper, k=1 - dark: p * (255 - k * v))))
        for value, corner, disc in holes:
            plane.paste(value, corner, disc)
        planes.append(plane)
    image = Image.merge("RGB", planes) if style.rgb else planes[0]
    if style.jpeg:
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=style.jpeg)
        image = Image.open(io.BytesIO(buffer.getvalue()))
        image.load()
    return image


def _light(canvas: np.ndarray, style: _Style, rng: np.random.Generator, headroom: int = 0) -> Image.Image:
    """Page-size 8-bit factor (``255 - headroom``: full light, room left for the noise): a light
    gradient, a vignette, slow blotches, paper texture and the other side's writing showing through
    (the lines' ink ``canvas``, mirrored and shifted), drawn at a quarter of the size and enlarged (all
    of it is smooth at that scale)."""
    H, W = style.height, style.width
    h, w = max(2, H // 4), max(2, W // 4)
    y = np.linspace(-1, 1, h, dtype=np.float32)[:, None]
    x = np.linspace(-1, 1, w, dtype=np.float32)[None, :]
    direction = rng.normal(size=2)
    direction /= np.linalg.norm(direction) + 1e-9
    strength = style.lighting
    field = 1 + strength * 0.5 * (direction[0] * x + direction[1] * y)
    cx, cy = rng.uniform(-0.5, 0.5, 2)
    field = field * (1 - strength * 0.5 * ((x - cx) ** 2 + (y - cy) ** 2))
    blotches = Image.fromarray(rng.normal(0, 0.02, (3, 4)).astype(np.float32), "F")
    blotches = blotches.resize((w, h), Image.Resampling.BICUBIC)
    field = field * (1 + np.asarray(blotches)) * (1 + style.texture * rng.standard_normal((h, w), dtype=np.float32))
    field = field * np.float32((255 - headroom) / field.max())
    if style.bleed:
        back = Image.fromarray(canvas).resize((w, h), Image.Resampling.BOX).filter(ImageFilter.BoxBlur(1))
        back = np.roll(np.asarray(back, dtype=np.float32)[:, ::-1], int(rng.integers(0, h)), axis=0)
        field *= 1 - back * np.float32(style.bleed / 255)
    small = np.clip(field, 0, 255).astype(np.uint8)
    return Image.fromarray(small).resize((W, H), Image.Resampling.BILINEAR)


def _unrotated(style: _Style) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The unrotated-frame coordinates of pixel centres as sums of a row and a column term:
    ``qx = ax[:, None] + bx[None, :]`` and ``qy = ay[:, None] + by[None, :]``."""
    H, W = style.height, style.width
    c, s = math.cos(math.radians(style.angle)), math.sin(math.radians(style.angle))
    ys = np.arange(H, dtype=np.float64) + 0.5 - H / 2
    xs = np.arange(W, dtype=np.float64) + 0.5 - W / 2
    return s * ys, c * xs + W / 2, c * ys + H / 2, -s * xs


def _profile_lookup(a: np.ndarray, b: np.ndarray, profile) -> np.ndarray:
    """``profile(q)`` (0-1) as uint8 on the grid ``q = a[:, None] + b[None, :]``, with q rounded to 1/4 px.

    One of ``a`` and ``b`` changes slowly (the page turns by a few degrees at most), so the grid is a
    few hundred runs of equal rows or columns, each a copy of one profile read from a table.
    """
    ia = np.rint((a - a.min()) * 4).astype(np.int64)
    ib = np.rint((b - b.min()) * 4).astype(np.int64)
    q = a.min() + b.min() + np.arange(int(ia.max()) + int(ib.max()) + 1) / 4
    table = np.clip(np.rint(profile(q) * 255), 0, 255).astype(np.uint8)
    out = np.empty((len(a), len(b)), np.uint8)
    by_columns = np.ptp(ib) <= np.ptp(ia)
    slow = ib if by_columns else ia
    starts = np.concatenate([[0], np.flatnonzero(np.diff(slow)) + 1, [len(slow)]])
    for start, end in zip(starts[:-1], starts[1:]):
        if by_columns:
            out[:, start:end] = table[ia + ib[start]][:, None]
        else:
            out[start:end, :] = table[ia[start] + ib][None, :]
    return out


def _lines_profile(period: float, offset: float, width: float):
    """Anti-aliased lines ``width`` px wide every ``period`` px from ``offset``, as a function of q."""
    def profile(q: np.ndarray) -> np.ndarray:
        t = (q - offset) / period
        distance = np.abs(t - np.round(t)) * period
        return np.clip(width / 2 + 0.5 - distance, 0, 1)
    return profile


def _rules(style: _Style, phase: float) -> Image.Image | None:
    """Page-size rule coverage (255: on a rule) of the ruled, squared or Seyès paper, turned with the page."""
    if not style.grid:
        return None
    ax, bx, ay, by = _unrotated(style)
    g, width = style.grid_pitch, max(1.0, 0.025 * style.text_height)
    if style.grid == "seyes":  # thin lines every g, a stronger one every 4 g (where the text sits)
        thin, strong = _lines_profile(g, phase, width * 0.6), _lines_profile(4 * g, phase, width)
        rules = _profile_lookup(ay, by, lambda q: np.maximum(0.5 * thin(q), strong(q)))
    else:
        rules = _profile_lookup(ay, by, _lines_profile(g, phase, width))
    if style.grid in ("squared", "seyes"):
        period = g if style.grid == "squared" else 4 * g
        vertical = _profile_lookup(ax, bx, _lines_profile(period, style.columns[0][0], width * 0.8))
        np.maximum(rules, vertical, out=rules)
    return Image.fromarray(rules)


def _margin_rule(style: _Style) -> tuple[tuple[int, int, int, int], Image.Image] | None:
    """A red vertical rule left of the text: the box of pixels it can touch and its coverage there."""
    ax, bx, _, _ = _unrotated(style)
    x = style.columns[0][0] - 0.4 * style.text_height
    reach = abs(math.sin(math.radians(style.angle))) * style.height / 2 + 4
    x0, x1 = max(0, int(x - reach)), min(style.width, int(x + reach) + 1)
    if x1 <= x0:
        return None
    distance = np.abs(ax[:, None] + bx[None, x0:x1] - x)
    cover = np.clip(max(1.0, 0.03 * style.text_height) / 2 + 0.5 - distance, 0, 1)
    return (x0, 0, x1, style.height), Image.fromarray(np.rint(cover * 255).astype(np.uint8))


def _stamp(style: _Style, rng: np.random.Generator) -> tuple[tuple[int, int, int, int], Image.Image, np.ndarray]:
    """A stamp or printed mark that is not a text line: its box, coverage and RGB colour."""
    size = min(int(style.width * rng.uniform(0.1, 0.22)), style.height, style.width)
    mask = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask)
    stroke = max(2, size // 40)
    if style.stamp == "ring":
        draw.ellipse((stroke, stroke, size - stroke, size - stroke), outline=255, width=stroke)
        inner = size // 5
        draw.ellipse((inner, inner, size - inner, size - inner), outline=255, width=max(1, stroke // 2))
        dot = size / 30
        for angle in np.linspace(0, 2 * np.pi, int(rng.integers(8, 16)), endpoint=False):  # letters round it
            cx, cy = size / 2 + size * 0.4 * math.cos(angle), size / 2 + size * 0.4 * math.sin(angle)
            draw.ellipse((cx - dot, cy - dot, cx + dot, cy + dot), fill=255)
    elif style.stamp == "box":
        draw.rectangle((stroke, size // 4, size - stroke, 3 * size // 4), outline=255, width=stroke)
        draw.rectangle((size // 6, size // 3, 5 * size // 6, 2 * size // 3), fill=255)
    elif style.stamp == "logo":
        draw.ellipse((0, 0, size // 2, size // 2), fill=255)
        draw.polygon([(size // 3, size), (size, size // 3), (size, size)], fill=255)
    else:  # barcode
        x = 0
        while x < size:
            bar = int(rng.integers(1, 6)) * stroke // 2 + 1
            if rng.random() < 0.5:
                draw.rectangle((x, size // 3, x + bar, 2 * size // 3), fill=255)
            x += bar + 1
    mask = mask.rotate(rng.uniform(-30, 30), resample=Image.Resampling.BILINEAR)
    cover = np.asarray(mask, dtype=np.float32) / 255
    if style.stamp in ("ring", "box"):  # stamp ink is patchy
        cover = cover * np.clip(0.8 + 0.4 * rng.standard_normal(cover.shape, dtype=np.float32), 0, 1)
    cover = Image.fromarray(np.rint(cover * rng.uniform(0.4, 0.9) * 255).astype(np.uint8))
    x0, y0 = int(rng.integers(0, style.width - size + 1)), int(rng.integers(0, style.height - size + 1))
    colours = {"ring": [(0.8, 0.15, 0.2), (0.25, 0.3, 0.75), (0.45, 0.2, 0.55)], "box": [(0.25, 0.3, 0.75)],
               "logo": [(0.1, 0.1, 0.1), (0.2, 0.35, 0.6)], "barcode": [(0.05, 0.05, 0.05)]}[style.stamp]
    colour = np.array(colours[int(rng.integers(len(colours)))])
    return (x0, y0, x0 + size, y0 + size), cover, colour


def _holes(style: _Style, rng: np.random.Generator) -> list[tuple[int, tuple[int, int], Image.Image]]:
    """Punch holes near the left (or right) edge, dark or light: (grey value, top-left corner, disc mask)."""
    W, H = style.width, style.height
    radius = W * rng.uniform(0.01, 0.015)
    cx = W * rng.uniform(0.025, 0.04)
    cx = W - cx if style.holes_right else cx
    gap = W * (0.38 if style.holes == 2 else 0.2)
    value = int(rng.uniform(10, 60) if style.holes_dark else rng.uniform(235, 255))
    r = int(radius) + 2
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    disc = Image.fromarray(np.rint(np.clip(radius + 0.5 - np.hypot(yy, xx), 0, 1) * 255).astype(np.uint8))
    holes = []
    for k in range(style.holes):
        cy = H / 2 + (k - (style.holes - 1) / 2) * gap
        corner = (int(cx) - r, int(cy) - r)
        if 0 <= corner[0] <= W - 2 * r - 1 and 0 <= corner[1] <= H - 2 * r - 1:
            holes.append((value, corner, disc))
    return holes
