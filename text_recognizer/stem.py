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
from scipy import ndimage

from text_recognizer.metadata import LINE_HEIGHT

#: The stem's default output height (the storage height of dataset lines; ``text_recognizer.metadata``).
DEFAULT_HEIGHT = LINE_HEIGHT

#: Images narrower than this after resizing are padded on the right (a few windows of paper).
_MIN_WIDTH = 8

#: Share of the estimated slant that ``preprocess(..., deslant=True)`` removes. Taking it all away
#: over-corrects: cursive's upstrokes and loops pull the estimate past the writer's real slant, and
#: the models were trained on IAM, whose writers lean a little. Measured on the bundled model
#: (``benchmarks/deslant_strength.py``): 0.6 read best of 0.5-1.25 on IAM val and both out-of-domain sets.
SLANT_STRENGTH = 0.6

#: Only edges of strokes within this many degrees of vertical vote for the slant (not ligatures,
#: t-bars, underlines or ruled lines, which are closer to horizontal).
_MAX_SLANT_DEGREES = 45.0


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


def estimate_slant(ink: np.ndarray) -> float:
    """Dominant slant of the strokes of an ink-high line ``(h, w)``, in degrees; > 0 leans right.

    An edge of a stroke that leans by ``a`` from vertical has its gradient at ``a`` from horizontal,
    so ``atan(gy / gx)`` of the near-vertical strokes' edges is their slant. Their median, weighted
    by edge strength, ignores the odd loop or ligature that a mean would follow. 0 for a line with
    too few edges to tell.
    """
    gx = ndimage.sobel(ink, axis=1)
    gy = ndimage.sobel(ink, axis=0)
    energy = gx * gx + gy * gy
    with np.errstate(divide="ignore", invalid="ignore"):
        angle = np.degrees(np.arctan(gy / gx))  # NaN where gx = gy = 0; +-90 where gx = 0
    keep = (np.abs(angle) < _MAX_SLANT_DEGREES) & (energy > 0.05 * float(energy.max()))
    if int(keep.sum()) < 10:
        return 0.0
    angles, weights = angle[keep], energy[keep]
    order = np.argsort(angles)
    cumulative = np.cumsum(weights[order])
    return float(angles[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


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
    columns = np.arange(w + 2 * pad, dtype=np.float32)
    source = np.arange(w, dtype=np.float32)
    out = np.empty((h, w + 2 * pad), dtype=np.float32)
    for y in range(h):  # output column x of row y reads input column x - pad - (y - middle) * tan
        out[y] = np.interp(columns - pad - (y - middle) * tangent, source, ink[y], left=0.0, right=0.0)
    return out


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
