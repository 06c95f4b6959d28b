"""One line's ink on the page: the crop bent, blurred, scaled, tilted and turned with the page, pasted by one
affine resampling, with its truth (``truth.envelope``) carried by the same map.

Why a module of its own: all per-line pixel work happens here, on each line's crop rather than on the
page (pages are made on the fly during training), and the polygon and baseline are measured on the very
pixels that are pasted. Blurring the ink alone stands for blurring the page (the paper under it is
smooth already). The ink goes into a ``(H, W)`` uint8 canvas (255: full ink) that the paper
(``paper.finish``) turns into the image.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageFilter

from text_recognizer.segmentation.synthetic.layout import Placement
from text_recognizer.segmentation.synthetic.style import Style
from text_recognizer.segmentation.synthetic.truth import Point, SyntheticLine, envelope


def draw_line(canvas: np.ndarray, p: Placement, style: Style, rng: np.random.Generator) -> SyntheticLine | None:
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

    geometry = envelope(curved, p.height / ky)
    if geometry is None:
        return None
    polygon, stops, (high, low) = geometry
    levels = pad + band + shift[np.clip(stops.astype(np.int64) - 2, 0, w0 - 1)]
    baseline = np.stack([stops, np.clip(levels, high, low)], axis=1)

    # The blur is meant in page px; blurring before enlarging keeps it the same.
    patch = Image.fromarray(curved).filter(blur_kernel(min(1.0, style.blur / ky)))
    opacity = min(1.0, style.opacity * rng.uniform(0.9, 1.1))

    # Rigid motion: the line tilts about its own centre, then the page turns about its centre.
    tilt = style.line_angle * rng.uniform(-1, 1)
    tilt = math.copysign(min(abs(tilt), math.degrees(math.atan(0.5 * p.height / (kx * w0)))), tilt)
    page_turn, turn = rotation(style.angle), rotation(style.angle + tilt)
    scale = np.diag([kx, ky])
    matrix = turn @ scale
    centre_page = np.array([style.width / 2, style.height / 2])
    centre_line = scale @ np.array([curved.shape[1] / 2, curved.shape[0] / 2])
    origin = np.array([p.x - 2 * kx, p.baseline - (pad + band) * ky])
    move = centre_page + page_turn @ (origin + centre_line - centre_page) - turn @ centre_line
    if not paste(canvas, np.asarray(patch), opacity, matrix, move):
        return None

    def to_page(points: np.ndarray) -> tuple[Point, ...]:
        points = points @ matrix.T + move
        points[:, 0] = np.clip(points[:, 0], 0, style.width - 1)
        points[:, 1] = np.clip(points[:, 1], 0, style.height - 1)
        return tuple(map(tuple, points.tolist()))

    return SyntheticLine(to_page(polygon), to_page(baseline))


def blur_kernel(sigma: float) -> ImageFilter.Kernel:
    """A 3x3 Gaussian of ``sigma`` px: the slight blur of a scan, at a third of the cost of PIL's
    ``GaussianBlur`` (sigma <= 1 hardly reaches past one pixel)."""
    taps = np.exp(-np.array([1.0, 0.0, 1.0]) / (2 * sigma**2))
    kernel = np.outer(taps, taps)
    return ImageFilter.Kernel((3, 3), (kernel / kernel.sum()).ravel().tolist(), scale=1)


def rotation(degrees: float) -> np.ndarray:
    """2x2 rotation by ``degrees`` in page coordinates (y down)."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, -s], [s, c]])


def paste(canvas: np.ndarray, patch: np.ndarray, opacity: float, matrix: np.ndarray, move: np.ndarray) -> bool:
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
