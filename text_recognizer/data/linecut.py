"""Cut one text line out of a page image by its polygon, and level it by its baseline.

Why: segmenters (kraken, Transkribus) give each line a polygon that follows the ascenders and
descenders; its bounding box also holds pieces of the neighbouring lines. We keep what lies inside
the polygon and paint the rest white paper, then rotate the line so its baseline is horizontal (the
model was trained on level lines). The page is read through the shared stem's ``to_grayscale``,
so every image mode works and the result is an 8-bit greyscale line, dark ink on white.

``cut_line_framed`` also returns the cut's ``LineFrame``, which maps a point of the cut line back to
the page (the crop's offset and, for a levelled line, the rotation undone), so positions read in the
line (word boxes) can be drawn on the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from text_recognizer.stem import to_grayscale

#: Baselines flatter than this (degrees) are left alone: rotating costs sharpness for nothing.
MIN_DESKEW_DEGREES = 0.5

Point = tuple[float, float]


def polygon_area(points: Sequence[Point]) -> float:
    """Absolute area by the shoelace formula (0 for fewer than 3 points or collinear ones)."""
    if len(points) < 3:
        return 0.0
    xs = np.array([p[0] for p in points], dtype=np.float64)
    ys = np.array([p[1] for p in points], dtype=np.float64)
    return float(abs(np.dot(xs, np.roll(ys, -1)) - np.dot(ys, np.roll(xs, -1))) / 2)


def polygon_problem(points: Sequence[Point] | None, image_size: tuple[int, int]) -> str | None:
    """Why ``points`` cannot be cut from an image of ``(width, height)``, or ``None`` if it can."""
    if not points:
        return "polygon is empty"
    if len(points) < 3:
        return f"polygon has {len(points)} point(s), needs at least 3"
    if not all(math.isfinite(x) and math.isfinite(y) for x, y in points):
        return "polygon has coordinates that are not finite"
    if polygon_area(points) < 1.0:
        return f"polygon has no area ({len(points)} points on a line or a single spot)"
    width, height = image_size
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    if max(xs) <= 0 or max(ys) <= 0 or min(xs) >= width or min(ys) >= height:
        extent = f"x {min(xs):g}..{max(xs):g}, y {min(ys):g}..{max(ys):g}"
        return f"polygon ({extent}) lies outside the {width}x{height} image"
    return None


def baseline_angle(baseline: Sequence[Point] | None) -> float:
    """Slope of the baseline in degrees, positive when it falls to the right (y grows downwards);
    a least-squares fit through its points, 0 when it has fewer than 2 points or no width."""
    if not baseline or len(baseline) < 2:
        return 0.0
    xs = np.array([p[0] for p in baseline], dtype=np.float64)
    ys = np.array([p[1] for p in baseline], dtype=np.float64)
    if float(np.ptp(xs)) < 1.0:
        return 0.0
    slope = np.polyfit(xs, ys, 1)[0]
    return math.degrees(math.atan(slope))


def page_gray(page: Image.Image) -> np.ndarray:
    """The page as float32 luminance in [0, 1] (1 = white), through the shared stem."""
    return to_grayscale(page)


@dataclass(frozen=True)
class LineFrame:
    """How a cut line sits on its page: ``to_page`` maps a point ``(x, y)`` of the cut line (continuous
    pixel coordinates: pixel ``i`` spans ``[i, i + 1)``) to the page's pixels.

    The cut is the polygon's bounding box at ``(left, top)`` of the page; a levelled line was then
    rotated by ``angle`` degrees about the box's centre (PIL's ``rotate(expand=True)``, giving a
    ``rotated_size`` image) and cropped at ``offset`` of that image to the polygon's extent.
    """

    left: float
    top: float
    box_size: tuple[int, int]  # (width, height) of the unrotated box
    angle: float = 0.0
    rotated_size: tuple[int, int] | None = None
    offset: tuple[float, float] = (0.0, 0.0)

    def to_page(self, x: float, y: float) -> tuple[float, float]:
        x, y = x + self.offset[0], y + self.offset[1]
        if self.angle and self.rotated_size is not None:
            # PIL's inverse map for rotate(angle, expand=True): box = R (p - rotated centre) + box centre
            theta = -math.radians(self.angle)
            cos, sin = math.cos(theta), math.sin(theta)
            dx, dy = x - self.rotated_size[0] / 2, y - self.rotated_size[1] / 2
            x = cos * dx + sin * dy + self.box_size[0] / 2
            y = -sin * dx + cos * dy + self.box_size[1] / 2
        return self.left + x, self.top + y


def cut_line(page: Image.Image | np.ndarray, polygon: Sequence[Point], baseline: Sequence[Point] | None = None,
             deskew: bool = True) -> Image.Image:
    """The line inside ``polygon`` as an ``L`` image, white outside the polygon, levelled by ``baseline``.

    ``page`` is a PIL image or the array from :func:`page_gray` (pass the array when cutting many
    lines from one page). Raises ``ValueError`` for a polygon that cannot be cut.
    """
    return cut_line_framed(page, polygon, baseline, deskew)[0]


def cut_line_framed(page: Image.Image | np.ndarray, polygon: Sequence[Point], baseline: Sequence[Point] | None = None,
                    deskew: bool = True) -> tuple[Image.Image, LineFrame]:
    """:func:`cut_line`, and the ``LineFrame`` that maps the cut line's pixels back to the page's."""
    gray = page if isinstance(page, np.ndarray) else page_gray(page)
    if gray.ndim != 2:
        raise ValueError(f"page must be a 2-D luminance array, got shape {gray.shape}")
    height, width = gray.shape
    problem = polygon_problem(polygon, (width, height))
    if problem:
        raise ValueError(problem)
    xs, ys = [p[0] for p in polygon], [p[1] for p in polygon]
    x0, y0 = max(0, math.floor(min(xs))), max(0, math.floor(min(ys)))
    x1, y1 = min(width, math.ceil(max(xs)) + 1), min(height, math.ceil(max(ys)) + 1)
    mask = Image.new("L", (x1 - x0, y1 - y0), 0)
    ImageDraw.Draw(mask).polygon([(x - x0, y - y0) for x, y in polygon], fill=255, outline=255)
    inside = np.asarray(mask) > 0
    if not inside.any():
        raise ValueError("polygon covers no pixel of the image")
    line = np.where(inside, gray[y0:y1, x0:x1], np.float32(1.0)).astype(np.float32)
    frame = LineFrame(float(x0), float(y0), mask.size)
    angle = baseline_angle(baseline) if deskew else 0.0
    if abs(angle) >= MIN_DESKEW_DEGREES:
        # PIL rotates counter-clockwise as displayed; a baseline falling to the right needs exactly that.
        rotated = Image.fromarray(line, mode="F").rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=1.0)
        box = mask.rotate(angle, Image.Resampling.NEAREST, expand=True, fillcolor=0).getbbox()
        line = np.asarray(rotated.crop(box) if box else rotated, dtype=np.float32)
        frame = LineFrame(float(x0), float(y0), mask.size, angle, rotated.size,
                          (float(box[0]), float(box[1])) if box else (0.0, 0.0))
    return Image.fromarray(np.clip(np.rint(line * 255.0), 0, 255).astype(np.uint8), mode="L"), frame
