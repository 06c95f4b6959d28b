"""Image preprocessing shared by training, evaluation, the CLI and the API.

Every entry point turns a PIL image into the model's input with ``preprocess``, so the
preprocessing can never drift between training and serving.

Convention: a line is a float tensor ``(1, H, W)`` in ``[0, 1]`` with **ink high** (1 = ink,
0 = paper). Ink-high makes zero-padding the same as blank paper, so batches can be padded with 0.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from PIL import Image, ImageOps

from text_recognizer.metadata import LINE_HEIGHT

#: The stem's default output height (the storage height of dataset lines; ``text_recognizer.metadata``).
DEFAULT_HEIGHT = LINE_HEIGHT

#: Images narrower than this after resizing are padded on the right (a few windows of paper).
_MIN_WIDTH = 8

#: Share of the estimated slant that ``preprocess(..., deslant=True)`` removes. Taking it all away
#: over-corrects: cursive's upstrokes and loops pull the estimate past the writer's real slant, and
#: the models were trained on IAM, whose writers lean a little. Measured on the bundled model
#: (``benchmarks/deslant_strength.py``): 0.6 read best of 0.4-1.0 on the first half of IAM val and held
#: up on its second half and on both out-of-domain sets (1.25, in a first probe, was worse everywhere).
SLANT_STRENGTH = 0.6

#: Only edges of strokes within this many degrees of vertical vote for the slant (not ligatures,
#: t-bars, underlines or ruled lines, which are closer to horizontal).
_MAX_SLANT_DEGREES = 45.0
_SLANT_BIN = 0.25  # degrees: the estimate's resolution (0.15 degrees of shear at strength 0.6)
_SLANT_BINS = int(2 * _MAX_SLANT_DEGREES / _SLANT_BIN)


def oriented_size(image: Image.Image) -> tuple[int, int]:
    """``(width, height)`` after EXIF orientation, as ``preprocess`` sees the image: the size that word and
    character positions are given in."""
    orientation = image.getexif().get(0x0112, 1)
    return (image.height, image.width) if orientation in (5, 6, 7, 8) else (image.width, image.height)


def to_grayscale(image: Image.Image) -> np.ndarray:
    """Any PIL image -> float32 ``(h, w)`` luminance in [0, 1] (1 = white).

    Handles EXIF orientation, 16-bit and 32-bit greyscale, palettes, CMYK and alpha. Transparent
    pixels become white paper; if that leaves no contrast (light ink drawn on a transparent
    canvas), the alpha channel itself is taken as the ink.
    """
    if not isinstance(image, Image.Image):
        raise TypeError(f"expected a PIL.Image.Image, got {type(image).__name__}")
    if image.width == 0 or image.height == 0:
        raise ValueError(f"image has no pixels ({image.width}x{image.height})")
    image = ImageOps.exif_transpose(image)
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        array = np.asarray(image, dtype=np.float64)
        high = 65535.0 if image.mode.startswith("I;16") or array.max() > 255 else 255.0
        return np.clip(array / high, 0.0, 1.0).astype(np.float32)
    if image.mode == "F":
        array = np.asarray(image, dtype=np.float32)
        high = float(array.max()) if array.max() > 1.0 else 1.0
        return np.clip(array / high, 0.0, 1.0)
    if image.mode == "P":
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "La", "RGBa"):
        image = image.convert("RGBA")
        alpha = np.asarray(image.getchannel("A"), dtype=np.float32) / 255.0
        gray = np.asarray(image.convert("L"), dtype=np.float32) / 255.0
        on_white = gray * alpha + (1.0 - alpha)
        if alpha.min() < 1.0 and on_white.std() < 0.02 and alpha.std() > 0.02:
            return 1.0 - alpha  # light strokes on a transparent canvas: alpha is the ink
        return on_white
    return np.asarray(image.convert("L"), dtype=np.float32) / 255.0


def normalise_ink(gray: np.ndarray) -> np.ndarray:
    """Luminance -> ink-high in [0, 1], whatever the polarity and contrast of the input.

    The paper is the most common tone of a line image, so the median is taken as the paper
    level: if it sits in the bright half of the image's range the ink is dark (invert), otherwise
    the ink is light. Then paper is stretched to 0 and the strongest ink (99.5th percentile, but at
    least halfway from the paper to the extreme ink, for lines with very little ink) to 1, which
    also evens out grey, low-contrast photos.
    """
    low, high = float(gray.min()), float(gray.max())
    if high - low < 1e-3:
        return np.zeros_like(gray, dtype=np.float32)
    sample = gray.ravel()[:: max(1, gray.size // 20000)]  # statistics from <= ~20k pixels: fast
    paper = float(np.median(sample))
    dark_ink = paper >= (low + high) / 2
    ink = 1.0 - gray if dark_ink else gray
    paper_level = 1.0 - paper if dark_ink else paper
    ink_level = float(np.percentile(1.0 - sample if dark_ink else sample, 99.5))
    # With very little ink (one short word on a long line: < 0.5 % of the pixels) the percentile
    # is paper noise; never put full ink below halfway between the paper and the strongest ink.
    ink_level = max(ink_level, paper_level + 0.5 * (float(ink.max()) - paper_level))
    scale = max(ink_level - paper_level, 1e-3)
    return np.clip((ink - paper_level) / scale, 0.0, 1.0).astype(np.float32)


def sobel_gradients(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(d/dx, d/dy)`` 3x3 Sobel responses of ``(h, w)``, edges mirrored: ``scipy.ndimage.sobel``'s
    values in a few whole-array slices, about 10x faster on a 40-px line (~0.1 ms instead of ~1.1)."""
    p = np.pad(image.astype(np.float32, copy=False), 1, mode="symmetric")
    rows = p[:-2] + 2 * p[1:-1] + p[2:]  # (h, w + 2) vertical smoothing
    cols = p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]  # (h + 2, w) horizontal smoothing
    return rows[:, 2:] - rows[:, :-2], cols[2:] - cols[:-2]


def estimate_slant(ink: np.ndarray) -> float:
    """Dominant slant of the strokes of an ink-high line ``(h, w)``, in degrees; > 0 leans right.

    An edge of a stroke that leans by ``a`` from vertical has its gradient at ``a`` from horizontal,
    so ``atan(gy / gx)`` of the near-vertical strokes' edges is their slant. Their median, weighted
    by edge strength, ignores the odd loop or ligature that a mean would follow. 0 for a line with
    too few edges to tell.
    """
    gx, gy = sobel_gradients(ink)
    energy = gx * gx + gy * gy
    # near-vertical strokes: gradient within 45 degrees of horizontal; and not the paper's faint texture
    keep = (np.abs(gy) < np.abs(gx)) & (energy > 0.05 * float(energy.max()))
    if int(np.count_nonzero(keep)) < 10:
        return 0.0
    angles = np.degrees(np.arctan(gy[keep] / gx[keep]))  # (-45, 45)
    # weighted median on a histogram of _SLANT_BIN-degree bins: no sort of every edge pixel
    bins = np.clip(((angles + _MAX_SLANT_DEGREES) / _SLANT_BIN).astype(np.int64), 0, _SLANT_BINS - 1)
    cumulative = np.cumsum(np.bincount(bins, weights=energy[keep], minlength=_SLANT_BINS))
    median_bin = int(np.searchsorted(cumulative, cumulative[-1] / 2))
    return float(-_MAX_SLANT_DEGREES + (median_bin + 0.5) * _SLANT_BIN)


def shear_upright(ink: np.ndarray, degrees: float) -> np.ndarray:
    """Shear an ink-high line so strokes leaning ``degrees`` (> 0: right) stand upright.

    Rows move sideways in proportion to their distance from the middle row, which stays where it
    was; ``pad = ceil(|tan| * (h - 1) / 2)`` columns of paper are added on each side so no ink is
    cut: the result is ``(h, w + 2 * pad)`` and a point of the middle row moves right by ``pad``.
    """
    h, w = ink.shape
    tangent = math.tan(math.radians(degrees))
    middle = (h - 1) / 2
    pad = math.ceil(abs(tangent) * middle - 1e-9)
    if pad == 0:
        return ink
    # output column x of row y reads input column x + shift[y], shift = -pad - (y - middle) * tan: one
    # whole-row shift per row, so linear interpolation between two gathered columns, zero paper outside
    shift = -pad - (np.arange(h) - middle) * tangent  # (h,)
    whole = np.floor(shift).astype(np.int64)
    fraction = (shift - whole).astype(np.float32)[:, None]  # (h, 1)
    margin = 2 * pad + 2  # input columns read: x + shift in [-2 * pad - 1, w + 2 * pad]
    padded = np.pad(ink, ((0, 0), (margin, margin)))  # (h, w + 2 * margin)
    index = np.arange(w + 2 * pad)[None, :] + (whole + margin)[:, None]  # (h, w + 2 * pad)
    left = np.take_along_axis(padded, index, axis=1)
    right = np.take_along_axis(padded, index + 1, axis=1)
    return ((1.0 - fraction) * left + fraction * right).astype(np.float32, copy=False)


def deslant_line(ink: np.ndarray, strength: float = SLANT_STRENGTH) -> np.ndarray:
    """Remove ``strength`` of the line's estimated slant (``estimate_slant``, ``shear_upright``)."""
    return shear_upright(ink, strength * estimate_slant(ink))


def preprocess(image: Image.Image, height: int = DEFAULT_HEIGHT, deslant: bool = False) -> torch.Tensor:
    """PIL image of one text line -> ``(1, height, W)`` float tensor, ink high, aspect ratio kept.

    ``deslant`` (a model's ``deslant`` setting) then shears the line towards upright strokes
    (:func:`deslant_line`), padding both sides equally, so ``W`` grows by an even number of columns.
    """
    if height < 8:
        raise ValueError(f"height must be at least 8 pixels, got {height}")
    gray = to_grayscale(image)
    h, w = gray.shape
    width = max(1, round(w * height / h))
    if (h, w) != (height, width):
        gray = np.asarray(
            Image.fromarray(gray, mode="F").resize((width, height), Image.Resampling.BILINEAR, reducing_gap=2.0)
        )
    ink = normalise_ink(gray)
    if deslant:
        ink = deslant_line(ink)
    if ink.shape[1] < _MIN_WIDTH:
        ink = np.pad(ink, ((0, 0), (0, _MIN_WIDTH - ink.shape[1])))
    return torch.from_numpy(np.ascontiguousarray(ink))[None]  # (1, H, W)
