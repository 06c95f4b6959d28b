"""Training-time augmentation for handwriting lines: clean binarised scans -> phone photos and scans.

Works on PIL images **before** the stem, with the stem's input convention: mode "L" (any mode is
accepted and converted), dark ink on light paper, in and out. It is a ``torchvision.transforms.v2``
pipeline (``v2.Compose`` of ``v2.Transform`` subclasses, each applied with its own probability and
parameter ranges from ``AugmentConfig``), in this order:

geometry    width stretch -> slant (shear) + small rotation -> elastic warp -> surroundings (loose
            vertical margins, stroke fragments of the lines above and below) -> erosion/dilation
appearance  ink and paper (stroke grey level, paper tone, uneven light, texture, ruled lines)
            -> brightness/contrast -> blur -> noise -> JPEG artefacts

It is for training only: ``training/loop/data.py`` wraps the training set alone (``--augment``), never the
validation or test sets, and the stem is the same with or without it.

Randomness: every parameter is drawn with ``torch.rand(..., generator=generator)`` (large noise
arrays come from a numpy generator seeded that way; the pixel work is numpy/PIL, not torch, so it
does not suffer from torch's intra-op threads on a busy CPU). Without a
generator the global torch RNG is used, which ``DataLoader`` seeds differently in every worker (so
workers do not repeat each other) and ``torch.manual_seed`` makes reproducible. With a
``torch.Generator`` the pipeline is deterministic by itself (use one per process).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import torch
import torchvision.transforms.v2 as v2
import torchvision.transforms.v2.functional as F
from PIL import Image, ImageFilter

__all__ = ["AugmentConfig", "build_augmentation", "LineAugmentation"]

Range = tuple[float, float]


@dataclass(frozen=True)
class AugmentConfig:
    """Probability (``*_p``) and parameter range of every operation. ``p = 0`` disables one.

    ``apply_p`` is the share of lines that go through the pipeline at all; the others are shown
    as they are. Clean lines keep the model close to the scans it is validated on and let it fit
    faster, the augmented ones teach it phone photos and other hands (``benchmarks/RESULTS.md``).
    """

    apply_p: float = 1.0
    stretch_p: float = 0.5
    stretch: Range = (0.8, 1.25)  # width factor
    shear_p: float = 0.6
    shear: Range = (-18.0, 18.0)  # degrees; positive leans ascenders to the right
    rotate_p: float = 0.3
    rotate: Range = (-1.2, 1.2)  # degrees (the canvas grows so that nothing is cut off)
    elastic_p: float = 0.3
    elastic_alpha: Range = (0.8, 2.5)  # displacement amplitude, px
    elastic_cell: float = 12.0  # px between the random displacement knots (smoothness)
    margin_p: float = 0.4  # loose crops: paper added above and below (real line crops are not tight)
    margin: Range = (0.0, 0.6)  # added paper height, as a share of the line height, on each side
    neighbour_p: float = 0.25  # descenders/ascenders of the neighbouring lines cut into the crop
    neighbour_height: Range = (0.08, 0.3)  # height of the fragment strip, share of the line height
    morph_p: float = 0.25  # thicken (dilate) or thin (erode) the strokes, half each
    morph_strength: Range = (0.5, 1.0)  # blend of the 3x3 min/max filter with the original
    ink_p: float = 0.8
    ink_level: Range = (0.0, 120.0)  # grey value of full ink
    ink_variation: Range = (0.0, 40.0)  # smooth change of ink grey along the line
    paper_p: float = 0.8
    paper_level: Range = (165.0, 252.0)  # grey value of the paper
    paper_gradient: Range = (0.0, 35.0)  # uneven light: a linear ramp across the line, grey levels
    paper_texture: Range = (0.0, 10.0)  # blotchy low-frequency texture, grey levels
    ruled_p: float = 0.25  # ruled line(s) under (and sometimes above) the text
    ruled_darkness: Range = (25.0, 90.0)  # how much darker than the paper
    ruled_width: Range = (0.8, 2.2)  # px
    contrast_p: float = 0.5
    brightness: Range = (0.8, 1.15)
    contrast: Range = (0.55, 1.2)
    blur_p: float = 0.4
    blur_sigma: Range = (0.3, 1.3)
    noise_p: float = 0.4
    noise_std: Range = (2.0, 12.0)
    jpeg_p: float = 0.3
    jpeg_quality: Range = (20.0, 85.0)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_p") and not 0.0 <= value <= 1.0:
                raise ValueError(f"AugmentConfig.{f.name} must be a probability in [0, 1], got {value}")
            if isinstance(value, tuple) and (len(value) != 2 or value[0] > value[1]):
                raise ValueError(f"AugmentConfig.{f.name} must be a (low, high) range with low <= high, got {value}")

    @classmethod
    def off(cls) -> AugmentConfig:
        """Every operation's probability 0 (an identity pipeline)."""
        return cls(**{f.name: 0.0 for f in fields(cls) if f.name.endswith("_p") and f.name != "apply_p"})


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _as_gray(image: Image.Image) -> Image.Image:
    if not isinstance(image, Image.Image):
        raise TypeError(f"augmentation expects a PIL.Image.Image, got {type(image).__name__}")
    return image if image.mode == "L" else image.convert("L")


def _paper(image: Image.Image) -> int:
    """Paper grey level: the median of a strided sample of the pixels."""
    a = np.asarray(image)
    return int(np.median(a[:: max(1, a.shape[0] // 8), :: max(1, a.shape[1] // 128)]))


def _smooth_field(shape: tuple[int, int], cell: float, generator: torch.Generator | None) -> np.ndarray:
    """Random float32 field in about [-1, 1], smooth over ``cell`` px: coarse noise, bicubic upsampling."""
    h, w = shape
    gh, gw = max(2, math.ceil(h / cell) + 1), max(2, math.ceil(w / cell) + 1)
    coarse = (torch.rand(gh, gw, generator=generator) * 2 - 1).numpy()
    field = Image.fromarray(coarse, mode="F").resize((w, h), Image.Resampling.BICUBIC)
    return np.clip(np.asarray(field), -1.5, 1.5)


def _ink_of(a: np.ndarray) -> tuple[np.ndarray, float]:
    """uint8 dark-on-light image -> (ink-high float32 in [0, 1], paper grey level).

    Paper is the median grey, full ink the 0.5th percentile (like the stem's ``normalise_ink``,
    but from a histogram of a strided sample: ~10x cheaper).
    """
    sample = a[::2, ::2].ravel()
    cdf = np.cumsum(np.bincount(sample, minlength=256))
    paper = float(np.searchsorted(cdf, cdf[-1] * 0.5))
    dark = float(np.searchsorted(cdf, cdf[-1] * 0.005))
    if paper - dark < 8.0:  # hardly any contrast: treat everything darker than the paper as ink
        dark = min(dark, paper - 8.0)
    ink = (paper - a.astype(np.float32)) * (1.0 / (paper - dark))
    return np.clip(ink, 0.0, 1.0, out=ink), paper


class _Op(v2.Transform):
    """One random operation on PIL images, applied with probability ``p``."""

    _transformed_types = (Image.Image,)

    def __init__(self, p: float, generator: torch.Generator | None = None):
        super().__init__()
        self.p = float(p)
        self.generator = generator

    def uniform(self, low_high: Range) -> float:
        low, high = low_high
        return low + (high - low) * float(torch.rand((), generator=self.generator))

    def make_params(self, flat_inputs: list) -> dict:
        if self.p <= 0.0 or float(torch.rand((), generator=self.generator)) >= self.p:
            return {"apply": False}
        return {"apply": True, **self.draw()}

    def draw(self) -> dict:
        return {}

    def transform(self, inpt: Image.Image, params: dict) -> Image.Image:
        image = _as_gray(inpt)
        return self.apply(image, params) if params["apply"] else image

    def apply(self, image: Image.Image, params: dict) -> Image.Image:  # pragma: no cover - abstract
        raise NotImplementedError


# ----------------------------------------------------------------------------------------------
# geometry
# ----------------------------------------------------------------------------------------------


class WidthStretch(_Op):
    def __init__(self, p: float, factor: Range, generator=None):
        super().__init__(p, generator)
        self.factor = factor

    def draw(self) -> dict:
        return {"factor": self.uniform(self.factor)}

    def apply(self, image, params):
        width = max(1, round(image.width * params["factor"]))
        return F.resize(image, [image.height, width], antialias=True)


class SlantRotate(_Op):
    """Shear (slant) and a small rotation in one affine warp; the canvas grows so nothing is cut."""

    def __init__(self, shear_p: float, shear: Range, rotate_p: float, rotate: Range, generator=None):
        super().__init__(1.0 if (shear_p > 0 or rotate_p > 0) else 0.0, generator)
        self.shear_p, self.shear, self.rotate_p, self.rotate = shear_p, shear, rotate_p, rotate

    def draw(self) -> dict:
        shear = self.uniform(self.shear) if float(torch.rand((), generator=self.generator)) < self.shear_p else 0.0
        angle = self.uniform(self.rotate) if float(torch.rand((), generator=self.generator)) < self.rotate_p else 0.0
        return {"shear": shear, "angle": angle}

    def apply(self, image, params):
        shear, angle = params["shear"], params["angle"]
        if shear == 0.0 and angle == 0.0:
            return image
        w, h = image.size
        pad_x = math.ceil(abs(math.tan(math.radians(shear))) * h / 2 + abs(math.sin(math.radians(angle))) * h / 2) + 1
        pad_y = math.ceil(abs(math.sin(math.radians(angle))) * w / 2)
        paper = _paper(image)
        canvas = Image.new("L", (w + 2 * pad_x, h + 2 * pad_y), paper)
        canvas.paste(image, (pad_x, pad_y))
        # torchvision's shear is clockwise-positive on the x axis: negate so that + leans right
        return F.affine(
            canvas,
            angle=-angle,
            translate=[0.0, 0.0],
            scale=1.0,
            shear=[-shear, 0.0],
            interpolation=v2.InterpolationMode.BILINEAR,
            fill=paper,
        )


class Elastic(_Op):
    def __init__(self, p: float, alpha: Range, cell: float, generator=None):
        super().__init__(p, generator)
        self.alpha, self.cell = alpha, cell

    def draw(self) -> dict:
        return {"alpha": self.uniform(self.alpha)}

    def apply(self, image, params):
        # Random displacements of a coarse grid of knots (``cell`` px apart), upsampled bicubically
        # to a dense smooth field, then bilinear resampling in numpy (torch's grid_sample is as fast
        # alone but collapses under intra-op threading on busy CPUs).
        w, h = image.size
        dx = _smooth_field((h, w), self.cell, self.generator) * params["alpha"]
        dy = _smooth_field((h, w), self.cell, self.generator) * params["alpha"]
        paper = float(_paper(image))
        a = np.pad(np.asarray(image, dtype=np.float32) - paper, 1)  # (h+2, w+2), paper = 0 outside
        x = np.clip(np.arange(w, dtype=np.float32)[None, :] + dx + 1.0, 0.0, w + 0.999)
        y = np.clip(np.arange(h, dtype=np.float32)[:, None] + dy + 1.0, 0.0, h + 0.999)
        x0, y0 = x.astype(np.int32), y.astype(np.int32)
        fx, fy = x - x0, y - y0
        flat, stride = a.ravel(), w + 2
        i = y0 * stride + x0
        p00, p01 = np.take(flat, i), np.take(flat, i + 1)
        p10, p11 = np.take(flat, i + stride), np.take(flat, i + stride + 1)
        top = p00 + (p01 - p00) * fx
        bottom = p10 + (p11 - p10) * fx
        out = top + (bottom - top) * fy + paper
        return Image.fromarray(np.clip(out + 0.5, 0, 255).astype(np.uint8), mode="L")


class Surroundings(_Op):
    """What a real line crop holds besides the line: loose margins and bits of the neighbouring lines.

    IAM's lines are cropped tight to the ink; crops from page segmentations (PAGE/ALTO polygons,
    phone photos of notes) leave paper above and below, often with the descenders of the line
    above and the ascenders of the line below. Both change the text's scale and the ink's vertical
    position after the stem resizes the crop to the model's height, so the model must see them.
    The fragments are strips of this line's own strokes, shifted sideways: real ink, no labels.
    """

    def __init__(self, margin_p: float, margin: Range, neighbour_p: float, neighbour_height: Range, generator=None):
        super().__init__(1.0 if (margin_p > 0 or neighbour_p > 0) else 0.0, generator)
        self.margin_p, self.margin, self.neighbour_p, self.neighbour_height = (
            margin_p,
            margin,
            neighbour_p,
            neighbour_height,
        )

    def _chance(self, p: float) -> bool:
        return float(torch.rand((), generator=self.generator)) < p

    def draw(self) -> dict:
        margins = self._chance(self.margin_p)
        return {
            "top": self.uniform(self.margin) if margins else 0.0,
            "bottom": self.uniform(self.margin) if margins else 0.0,
            "above": self._chance(self.neighbour_p),
            "below": self._chance(self.neighbour_p),
            "above_h": self.uniform(self.neighbour_height),
            "below_h": self.uniform(self.neighbour_height),
            "above_shift": self.uniform((0.1, 0.9)),
            "below_shift": self.uniform((0.1, 0.9)),
        }

    def apply(self, image, params):
        w, h = image.size
        top, bottom = round(params["top"] * h), round(params["bottom"] * h)
        if not (top or bottom or params["above"] or params["below"]):
            return image
        a = np.asarray(image)
        paper = _paper(image)
        strips = []
        if params["above"]:  # the bottom rows (descenders) of a "line above": this line, shifted
            rows = max(1, round(params["above_h"] * h))
            strips.append(np.roll(a[h - rows :], round(params["above_shift"] * w), axis=1))
        strips.append(np.full((top, w), paper, dtype=np.uint8))
        strips.append(a)
        strips.append(np.full((bottom, w), paper, dtype=np.uint8))
        if params["below"]:  # the top rows (ascenders) of a "line below"
            rows = max(1, round(params["below_h"] * h))
            strips.append(np.roll(a[:rows], round(params["below_shift"] * w), axis=1))
        return Image.fromarray(np.ascontiguousarray(np.concatenate(strips, axis=0)), mode="L")


class Morphology(_Op):
    """Thicker (3x3 min filter on dark ink) or thinner (max filter) strokes, blended with the original."""

    def __init__(self, p: float, strength: Range, generator=None):
        super().__init__(p, generator)
        self.strength = strength

    def draw(self) -> dict:
        return {
            "dilate": float(torch.rand((), generator=self.generator)) < 0.5,
            "strength": self.uniform(self.strength),
        }

    def apply(self, image, params):
        a = np.asarray(image)
        op = np.minimum if params["dilate"] else np.maximum
        f = a.copy()
        op(f[:, 1:], a[:, :-1], out=f[:, 1:])  # 3x1 filter ...
        op(f[:, :-1], a[:, 1:], out=f[:, :-1])
        g = f.copy()
        op(g[1:], f[:-1], out=g[1:])  # ... then 1x3: a separable 3x3 min/max filter
        op(g[:-1], f[1:], out=g[:-1])
        return Image.blend(image, Image.fromarray(g, mode="L"), params["strength"])


# ----------------------------------------------------------------------------------------------
# appearance
# ----------------------------------------------------------------------------------------------


class InkAndPaper(_Op):
    """Re-composite the strokes onto new paper: ink grey level, paper tone, light, texture, ruled lines."""

    def __init__(self, config: AugmentConfig, generator=None):
        super().__init__(1.0 if max(config.ink_p, config.paper_p, config.ruled_p) > 0 else 0.0, generator)
        self.c = config

    def _chance(self, p: float) -> bool:
        return float(torch.rand((), generator=self.generator)) < p

    def draw(self) -> dict:
        c = self.c
        return {
            "ink": self._chance(c.ink_p),
            "ink_level": self.uniform(c.ink_level),
            "ink_var": self.uniform(c.ink_variation),
            "paper": self._chance(c.paper_p),
            "paper_level": self.uniform(c.paper_level),
            "gradient": self.uniform(c.paper_gradient),
            "gradient_angle": self.uniform((0.0, 2 * math.pi)),
            "texture": self.uniform(c.paper_texture),
            "ruled": self._chance(c.ruled_p),
            "ruled_y": self.uniform((0.72, 0.97)),
            "ruled_top": self._chance(0.3),
            "ruled_top_y": self.uniform((0.02, 0.2)),
            "ruled_tilt": self.uniform((-0.01, 0.01)),
            "ruled_dark": self.uniform(c.ruled_darkness),
            "ruled_width": self.uniform(c.ruled_width),
        }

    def apply(self, image, params):
        if not (params["ink"] or params["paper"] or params["ruled"]):
            return image
        a = np.asarray(image)
        h, w = a.shape
        ink, paper_now = _ink_of(a)  # (h, w) ink-high in [0, 1]
        if params["paper"]:
            bg = np.full((h, w), params["paper_level"], dtype=np.float32)
            a = params["gradient_angle"]
            ramp = (
                np.linspace(-1, 1, w, dtype=np.float32)[None, :] * math.cos(a)
                + np.linspace(-1, 1, h, dtype=np.float32)[:, None] * math.sin(a) * (h / max(w, 1)) * 4
            )
            bg += ramp * (params["gradient"] / 2)
            if params["texture"] > 0.5:
                bg += _smooth_field((h, w), 6.0, self.generator) * params["texture"]
        else:
            bg = np.full((h, w), paper_now, dtype=np.float32)
        if params["ruled"]:
            ys = [params["ruled_y"]] + ([params["ruled_top_y"]] if params["ruled_top"] else [])
            rows = np.arange(h, dtype=np.float32)[:, None]
            cols = np.arange(w, dtype=np.float32)[None, :]
            for y in ys:
                centre = y * h + params["ruled_tilt"] * (cols - w / 2)
                profile = np.clip(params["ruled_width"] / 2 + 0.5 - np.abs(rows - centre), 0.0, 1.0)
                bg -= profile * params["ruled_dark"]
        if params["ink"]:
            level = np.float32(params["ink_level"])
            if params["ink_var"] > 0.5:
                along = _smooth_field((1, w), 80.0, self.generator)  # (1, w)
                level = np.clip(level + along * params["ink_var"], 0.0, 160.0)
        else:
            level = np.float32(0.0)
        out = bg * (1.0 - ink) + np.minimum(level, bg - 30.0) * ink
        return Image.fromarray(np.clip(out + 0.5, 0, 255).astype(np.uint8), mode="L")


class BrightnessContrast(_Op):
    def __init__(self, p: float, brightness: Range, contrast: Range, generator=None):
        super().__init__(p, generator)
        self.brightness, self.contrast = brightness, contrast

    def draw(self) -> dict:
        return {"brightness": self.uniform(self.brightness), "contrast": self.uniform(self.contrast)}

    def apply(self, image, params):
        image = F.adjust_contrast(image, params["contrast"])
        return F.adjust_brightness(image, params["brightness"])


class Blur(_Op):
    def __init__(self, p: float, sigma: Range, generator=None):
        super().__init__(p, generator)
        self.sigma = sigma

    def draw(self) -> dict:
        return {"sigma": self.uniform(self.sigma)}

    def apply(self, image, params):
        return image.filter(ImageFilter.GaussianBlur(params["sigma"]))


class Noise(_Op):
    def __init__(self, p: float, std: Range, generator=None):
        super().__init__(p, generator)
        self.std = std

    def draw(self) -> dict:
        return {"std": self.uniform(self.std), "seed": int(torch.randint(0, 2**62, (), generator=self.generator))}

    def apply(self, image, params):
        rng = np.random.default_rng(params["seed"])  # numpy, not torch: no intra-op threading here
        a = (
            np.asarray(image, dtype=np.float32)
            + rng.standard_normal((image.height, image.width), dtype=np.float32) * params["std"]
        )
        return Image.fromarray(np.clip(a + 0.5, 0, 255).astype(np.uint8), mode="L")


class Jpeg(_Op):
    def __init__(self, p: float, quality: Range, generator=None):
        super().__init__(p, generator)
        self.quality = quality

    def draw(self) -> dict:
        return {"quality": int(round(self.uniform(self.quality)))}

    def apply(self, image, params):
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=params["quality"])
        buffer.seek(0)
        with Image.open(buffer) as decoded:
            return decoded.convert("L")


# ----------------------------------------------------------------------------------------------
# the pipeline
# ----------------------------------------------------------------------------------------------


class LineAugmentation(v2.Compose):
    """The full pipeline; call it on a PIL image to get an augmented PIL image (mode "L")."""

    def __init__(self, config: AugmentConfig, generator: torch.Generator | None = None):
        c = config
        ops: list[v2.Transform] = [
            WidthStretch(c.stretch_p, c.stretch, generator),
            SlantRotate(c.shear_p, c.shear, c.rotate_p, c.rotate, generator),
            Elastic(c.elastic_p, c.elastic_alpha, c.elastic_cell, generator),
            Surroundings(c.margin_p, c.margin, c.neighbour_p, c.neighbour_height, generator),
            Morphology(c.morph_p, c.morph_strength, generator),
            InkAndPaper(c, generator),
            BrightnessContrast(c.contrast_p, c.brightness, c.contrast, generator),
            Blur(c.blur_p, c.blur_sigma, generator),
            Noise(c.noise_p, c.noise_std, generator),
            Jpeg(c.jpeg_p, c.jpeg_quality, generator),
        ]
        super().__init__(ops)
        self.config = config
        self.generator = generator

    def __call__(self, image: Image.Image) -> Image.Image:  # type: ignore[override]
        if self.config.apply_p < 1.0 and float(torch.rand((), generator=self.generator)) >= self.config.apply_p:
            return _as_gray(image)  # this line is shown clean
        return super().__call__(_as_gray(image))


def build_augmentation(
    config: AugmentConfig | None = None, generator: torch.Generator | None = None
) -> Callable[[Image.Image], Image.Image]:
    """The training augmentation for ``config`` (default ranges when ``None``)."""
    return LineAugmentation(config or AugmentConfig(), generator)
