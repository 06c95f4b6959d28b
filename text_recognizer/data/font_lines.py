"""Synthetic lines drawn with handwriting fonts from a folder the user supplies.

Why: IAM's ~650 writers are few and alike (one era, one form, binarised scans), and the model reads
cursive from other hands far worse (``benchmarks/RESULTS.md``). Script and handwriting typefaces
(for example the OFL-licensed ones on Google Fonts) add letter shapes no IAM writer has. Nothing
is bundled or downloaded: ``FontLines(font_dir, ...)`` reads every ``.ttf``/``.otf``/``.woff``/
``.woff2`` file in the folder (woff2 needs a FreeType built with brotli).

Each line takes text from ``sample_text`` (the built-in generator's English-like lines), or from
``texts`` when given (for example line-sized pieces of books or letters: ``training/run_experiment.py
--font-text``; the only way to draw lines in another alphabet, which the generator cannot write), one font,
and is laid out word by word with its own spacing, baseline wobble and size jitter, then cropped
to the ink, with dark anti-aliased ink on white paper like IAM's binarised scans. Slant, stretch,
pen width, paper, light, blur and noise come from the training augmentation, which the trainer
applies to these lines as to folder lines.

Characters a font lacks (its "missing glyph" box, or no ink) are dropped from that line's text
before it is drawn, so the label always matches the ink.

Determinism: item ``i`` depends only on ``(seed, i)`` and the sorted font file names.
``aspects()`` gives every line's width / height from the layout without drawing, so the trainer
can bucket these lines by width with the folder lines.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from text_recognizer.codec import DEFAULT_CHARSET
from text_recognizer.data.synthetic import sample_text
from text_recognizer.metadata import LINE_HEIGHT

__all__ = ["FONT_SUFFIXES", "FontLines", "find_fonts"]

FONT_SUFFIXES = (".ttf", ".otf", ".woff", ".woff2")
_SIZE = 72  # font size in px used for drawing; the line is resized to the model height afterwards
_PER_CHAR = (0.24, 0.42)  # mean character advance kept in this range, as a share of the output height


def find_fonts(font_dir: str | Path) -> list[Path]:
    """The font files in ``font_dir`` (sorted, not recursive); a clear error when there are none."""
    folder = Path(font_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"font folder {folder} does not exist")
    fonts = sorted(p for p in folder.iterdir() if p.suffix.lower() in FONT_SUFFIXES and p.is_file())
    if not fonts:
        raise ValueError(f"no font files ({', '.join(FONT_SUFFIXES)}) in {folder}")
    return fonts


@functools.cache  # bounded by fonts x the ~23 sizes _plan draws; a bounded LRU reloaded fonts on most lines
def _font(path: str, size: int) -> ImageFont.FreeTypeFont:
    try:
        return ImageFont.truetype(path, size)
    except OSError as error:
        raise ValueError(f"cannot read font {path}: {error}") from error


@functools.lru_cache(maxsize=64)
def _covered(path: str, charset: str) -> frozenset[str]:
    """Characters of ``charset`` that ``path`` draws with a glyph of its own (not the missing-glyph box)."""
    font = _font(path, 48)

    def ink(ch: str) -> bytes:
        image = Image.new("L", (128, 128), 0)
        ImageDraw.Draw(image).text((32, 32), ch, font=font, fill=255)
        return image.tobytes()

    missing = ink("\uffff")
    covered = {" "}
    for ch in charset:
        if ch != " ":
            drawn = ink(ch)
            if drawn != missing and any(drawn):
                covered.add(ch)
    return frozenset(covered)


@dataclass(frozen=True)
class _Plan:
    """Everything random about one line, drawn before any pixel is."""

    text: str
    font: str
    words: tuple[tuple[str, float, float, int], ...]  # (word, x, baseline offset, size) at _SIZE
    width: float  # drawn width at _SIZE, before the horizontal scale
    xscale: float  # horizontal scale that puts the mean character advance in _PER_CHAR


def _line_text(rng: np.random.Generator, max_chars: int, texts: tuple[str, ...]) -> str:
    """One line's text: a piece of ``texts`` (cut at the last space within ``max_chars``), else generated."""
    if not texts:
        return sample_text(rng, max_chars)
    text = texts[int(rng.integers(len(texts)))]
    if len(text) > max_chars:
        head = text[:max_chars]
        text = head.rsplit(" ", 1)[0] if " " in head.strip() else head
    return text


def _plan(rng: np.random.Generator, fonts: list[Path], max_chars: int, height: int, charset: str,
          texts: tuple[str, ...] = ()) -> _Plan:
    path = str(fonts[int(rng.integers(len(fonts)))])
    covered = _covered(path, charset)
    text = "".join(ch for ch in _line_text(rng, max_chars, texts) if ch in covered)
    text = " ".join(text.split()) or min(covered - {" "}, default="")  # empty only for a font without glyphs
    space = _font(path, _SIZE).getlength(" ") or 0.3 * _SIZE
    space_mul = rng.uniform(0.7, 1.6)
    drift_amp, drift_period = rng.uniform(0.0, 0.05) * _SIZE, rng.uniform(4.0, 12.0)
    phase = rng.uniform(0, 2 * np.pi)
    size_sd = rng.uniform(0.0, 0.05)
    words, x = [], 0.0
    for k, word in enumerate(text.split(" ")):
        size = int(round(_SIZE * float(np.clip(1.0 + size_sd * rng.normal(), 0.85, 1.15))))
        dy = drift_amp * np.sin(k / drift_period * 2 * np.pi + phase) + rng.normal(0.0, 0.015) * _SIZE
        words.append((word, x, float(dy), size))
        x += _font(path, size).getlength(word) + space * space_mul * rng.uniform(0.8, 1.25)
    width = max(x - space * space_mul, 1.0)
    ascent, descent = _font(path, _SIZE).getmetrics()
    per_char = width / max(len(text), 1) * height / max(ascent + descent, 1)  # output px at ``height``
    lo, hi = _PER_CHAR[0] * height, _PER_CHAR[1] * height
    xscale = float(np.clip(per_char, lo, hi) / max(per_char, 1e-6)) * rng.uniform(0.9, 1.1)
    return _Plan(text, path, tuple(words), width, xscale)


def _estimated_aspect(plan: _Plan) -> float:
    ascent, descent = _font(plan.font, _SIZE).getmetrics()
    return plan.width * plan.xscale / max(ascent + descent, 1)


def _render(plan: _Plan, rng: np.random.Generator, height: int) -> Image.Image:
    """Draw ``plan``: mode "L", dark ink (0) on white (255), cropped to the ink, ``height`` px high."""
    ascent, descent = _font(plan.font, _SIZE).getmetrics()
    pad = _SIZE
    canvas = Image.new("L", (int(plan.width) + 2 * pad, ascent + descent + 2 * pad), 0)
    draw = ImageDraw.Draw(canvas)
    for word, x, dy, size in plan.words:
        draw.text((pad + x, pad + ascent + dy), word, font=_font(plan.font, size), fill=255, anchor="ls")
    box = canvas.getbbox()
    if box is None:  # nothing drawn (a font without ink for the text): a blank line of the right size
        box = (pad, pad, pad + int(plan.width), pad + ascent + descent)
    top_margin, bottom_margin = rng.uniform(0.0, 0.08, 2) * (box[3] - box[1])
    side = rng.uniform(0.05, 0.3, 2) * _SIZE
    crop = canvas.crop((
        int(box[0] - side[0]), int(box[1] - top_margin), int(box[2] + side[1]), int(box[3] + bottom_margin) + 1
    ))
    scale = height / crop.height
    width = max(1, int(round(crop.width * scale * plan.xscale)))
    ink = crop.resize((width, height), Image.Resampling.LANCZOS)
    return Image.eval(ink, lambda v: 255 - v)  # ink high -> dark ink on white paper


class FontLines(torch.utils.data.Dataset):
    """``num_lines`` (image, text) pairs drawn with the fonts of ``font_dir``; item ``i`` depends on ``(seed, i)``."""

    def __init__(
        self,
        font_dir: str | Path,
        num_lines: int,
        seed: int = 0,
        height: int = LINE_HEIGHT,
        max_chars: int = 80,
        charset: str = DEFAULT_CHARSET,
        texts: Sequence[str] | None = None,
    ):
        if num_lines < 0:
            raise ValueError(f"num_lines must be >= 0, got {num_lines}")
        if height < 8:
            raise ValueError(f"height must be >= 8, got {height}")
        self.fonts = find_fonts(font_dir)
        for path in self.fonts:  # fail at start, not in a loader worker an hour in
            _font(str(path), _SIZE)
        self.num_lines = int(num_lines)
        self.seed = int(seed)
        self.height = int(height)
        self.max_chars = int(max_chars)
        self.charset = charset
        self.texts = tuple(t for t in (texts or ()) if t.strip())
        if texts is not None and not self.texts:
            raise ValueError("texts is empty: give at least one line of text, or None for generated text")
        self._layouts: list[_Plan] | None = None  # every line's plan, made once for aspects / label_lengths

    def __len__(self) -> int:
        return self.num_lines

    def _rng(self, index: int) -> np.random.Generator:
        return np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, index])

    def _index(self, index: int) -> int:
        index = int(index)
        if index < 0:
            index += self.num_lines
        if not 0 <= index < self.num_lines:
            raise IndexError(f"index {index} out of range for {self.num_lines} lines")
        return index

    def _plan(self, rng: np.random.Generator) -> _Plan:
        return _plan(rng, self.fonts, self.max_chars, self.height, self.charset, self.texts)

    def _all_plans(self) -> list[_Plan]:
        if self._layouts is None:
            self._layouts = [self._plan(self._rng(i)) for i in range(self.num_lines)]
        return self._layouts

    def aspects(self) -> list[float]:
        """Estimated width / height of every line, from the layout alone (for width-bucketed batches)."""
        return [_estimated_aspect(plan) for plan in self._all_plans()]

    def label_lengths(self) -> list[int]:
        """Length of every line's text (for curricula that order lines by label length)."""
        return [len(plan.text) for plan in self._all_plans()]

    def __getitem__(self, index: int) -> tuple[Image.Image, str]:
        rng = self._rng(self._index(index))
        plan = self._plan(rng)
        return _render(plan, rng, self.height), plan.text
