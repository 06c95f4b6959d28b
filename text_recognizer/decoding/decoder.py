"""Decode a model's frames into text with words, characters, positions and calibrated confidences.

One entry point for every caller (recognizer, evaluation, API): ``LineDecoder(codec, "greedy" |
"beam", bundle, ...)``. Both decoders produce a frame path (one class per frame: the arg-max for
greedy, the best beam hypothesis for beam); everything after that is shared:

- a character is a run of the same non-blank class in the path; it spans the frames of that run,
  and frame ``t`` saw pixels ``[t * stride, t * stride + window_width)`` of the preprocessed line,
  scaled back to the original image's width;
- a character's raw scores are its best frame probability ``p = max_t p_t(c)`` over its frames
  (as a logit, ``log p - log(1 - p)``, which keeps apart the many characters with p near 1) and its
  margin ``max_t (log p_t(c) - max_c' log p_t(c'))``: 0 when the model itself preferred it, negative
  when beam search or the LM chose it against the model's evidence;
- the raw scores become probabilities through the bundle's calibration
  (``text_recognizer.decoding.calibration``): characters ``P(char right)``, words ``P(word exactly
  right)``, the line ``expected fraction of characters right (1 - CER)``. Without a calibration
  (a checkpoint with no decoder bundle) they are the uncalibrated ``p(c)``, the product of a word's
  ``p(c)``, and the line's mean best-frame probability (geometric), as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding import calibration as cal
from text_recognizer.decoding.beam import BeamDecoder, BeamOptions
from text_recognizer.decoding.bundle import arpa_text, lexicon_words
from text_recognizer.decoding.greedy import DecodedLine, Span, runs
from text_recognizer.decoding.names import DECODERS
from text_recognizer.decoding.word_lm import WordLanguageModel


@dataclass(frozen=True)
class Geometry:
    """Maps frames to x pixels of the original image: window width and stride in preprocessed
    pixels, ``scale`` original pixels per preprocessed pixel, and the original ``image_width``."""

    window_width: int
    stride: int
    scale: float = 1.0
    image_width: float | None = None
    offset: float = 0.0  # preprocessed columns before the line's first column (deslant padding)

    def x_range(self, first: int, last: int) -> tuple[float, float]:
        start = max(0.0, first * self.stride - self.offset) * self.scale
        end = max(0.0, last * self.stride + self.window_width - self.offset) * self.scale
        if self.image_width is not None:
            start, end = min(start, self.image_width), min(end, self.image_width)
        return start, end

    @classmethod
    def for_line(cls, height: int, window_width: int, stride: int, stem_width: int,
                 image_size: tuple[int, int] | None = None, centred: bool = False) -> Geometry:
        """A line's geometry: ``stem_width`` preprocessed pixels at ``height``; ``image_size`` (the original
        ``(width, height)``) scales positions back to the original image, else they stay in stem pixels.

        ``centred``: the stem added its extra columns equally on both sides (deslanting), so the
        original line starts ``(stem_width - resized width) / 2`` columns in; without it any padding
        is on the right. Positions are those of the line's middle row.
        """
        if image_size is None:
            return cls(window_width, stride, 1.0, float(stem_width))
        w, h = image_size
        resized = max(1, round(w * height / h))  # the stem's width before any padding
        offset = max(0.0, (stem_width - resized) / 2) if centred else 0.0
        return cls(window_width, stride, w / resized, float(w), offset)


def _logit(logp: float) -> float:
    p = min(max(math.exp(logp), 1e-6), 1 - 1e-6)
    return math.log(p) - math.log1p(-p)


def line_features(path: Sequence[int], log_probs: torch.Tensor) -> dict:
    """Raw scores of one line's path: per character (spaces too) ``(id, first, last, log p, margin)``."""
    frames = len(path)
    if not frames:
        return {"chars": [], "mean_best": -50.0}  # no frames: confidence ~0
    scores = log_probs[:frames].numpy()  # (T, C)
    best = scores.max(-1)  # (T,)
    spans = runs(path)
    if not spans:
        return {"chars": [], "mean_best": float(best.mean())}
    # All runs at once (a long line has ~100): each run's frames side by side, reduced per run.
    ids, firsts, lasts = (np.array(column) for column in zip(*spans))  # (N,) each
    lengths = lasts - firsts + 1  # (N,)
    starts = np.cumsum(lengths) - lengths  # (N,) where each run begins among the gathered frames
    frame = np.repeat(firsts - starts, lengths) + np.arange(int(lengths.sum()))  # (sum of lengths,)
    own = scores[frame, np.repeat(ids, lengths)]  # (sum of lengths,) each frame's score of its run's character
    logp = np.maximum.reduceat(own, starts)  # (N,)
    margin = np.maximum.reduceat(own - best[frame], starts)  # (N,)
    chars = list(zip(ids.tolist(), firsts.tolist(), lasts.tolist(), logp.tolist(), margin.tolist()))
    return {"chars": chars, "mean_best": float(best.mean())}


def char_features(char: tuple) -> list[float]:
    """A character's calibration features: the logit of its probability and its margin."""
    return [_logit(char[3]), char[4]]


def word_features(chars: Sequence[tuple]) -> list[float]:
    """A word's calibration features: weakest and mean character logit, weakest margin, length."""
    logits = [_logit(c[3]) for c in chars]
    return [min(logits), sum(logits) / len(logits), min(c[4] for c in chars), math.log(len(chars))]


def line_calibration_features(chars: Sequence[tuple], mean_best: float) -> list[float]:
    """A line's calibration features: mean character logit, mean margin, mean best-frame log-probability."""
    if not chars:
        return [-14.0, -50.0, mean_best]
    return [sum(_logit(c[3]) for c in chars) / len(chars), sum(c[4] for c in chars) / len(chars), mean_best]


class LineDecoder:
    """Greedy or beam decoding + spans + confidences, configured once per model."""

    def __init__(self, codec: Codec, decoder: str = "greedy", bundle: dict | None = None,
                 use_lm: bool = True, **beam_overrides):
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        if not isinstance(codec, Codec):
            raise TypeError(f"codec must be a Codec, got {type(codec).__name__}")
        self.codec = codec
        self.name = decoder
        self.bundle = bundle or {}
        self.calibration = (self.bundle.get("calibration") or {}).get(decoder)
        self.beam: BeamDecoder | None = None
        self.options: BeamOptions | None = None
        if decoder == "beam":
            self.options = BeamOptions.from_dict(self.bundle.get("beam"), **beam_overrides)
            arpa = arpa_text(self.bundle) if (use_lm and self.bundle) else None
            word_arpa = arpa_text(self.bundle, "word_lm") if (use_lm and self.bundle) else None
            word_model = None
            if word_arpa is not None and self.options.word_lm_weight > 0:
                word_model = WordLanguageModel(word_arpa, lexicon_words(self.bundle))
            self.beam = BeamDecoder(codec, self.options, arpa, word_model)
        elif any(v is not None for v in beam_overrides.values()):
            raise ValueError(f"beam options {sorted(beam_overrides)} need decoder='beam'")

    @property
    def has_lm(self) -> bool:
        return self.beam is not None and self.beam.has_lm

    def path(self, log_probs: torch.Tensor) -> list[int]:
        """One line's ``(T, C)`` log-probabilities -> frame path."""
        if self.beam is not None:
            return self.beam.best_path(log_probs)
        return log_probs.argmax(-1).tolist()

    def decode(self, log_probs: torch.Tensor, geometry: Geometry) -> DecodedLine:
        """One line's ``(T, C)`` log-probabilities (valid frames only) -> a ``DecodedLine`` with spans."""
        log_probs = log_probs.detach().float().cpu()
        if log_probs.dim() != 2 or log_probs.shape[1] != self.codec.num_classes:
            raise ValueError(f"log_probs must be (T, {self.codec.num_classes}), got shape {tuple(log_probs.shape)}")
        path = self.path(log_probs)
        raw = line_features(path, log_probs)
        return self.assemble(raw, geometry)

    def assemble(self, raw: dict, geometry: Geometry) -> DecodedLine:
        """Raw per-line scores -> text, words, characters and (calibrated) confidences."""
        c = self.calibration
        chars: list[Span] = []
        words: list[Span] = []
        current: list[tuple] = []
        text_parts: list[str] = []

        def close_word() -> None:
            if not current:
                return
            if c:
                confidence = cal.apply(c["word"], word_features(current), "word")
            else:
                confidence = math.exp(sum(x[3] for x in current))
            start, end = geometry.x_range(current[0][1], current[-1][2])
            words.append(Span(self.codec.decode([x[0] for x in current]), confidence, start, end,
                              current[0][1], current[-1][2]))
            current.clear()

        for item in raw["chars"]:
            i, first, last, logp, _ = item
            character = self.codec.decode([i])
            text_parts.append(character)
            if character == " ":
                close_word()
                continue
            confidence = cal.apply(c["char"], char_features(item), "char") if c else math.exp(logp)
            start, end = geometry.x_range(first, last)
            chars.append(Span(character, confidence, start, end, first, last))
            current.append(item)
        close_word()
        text = "".join(text_parts)
        if c:
            line_confidence = cal.apply(c["line"], line_calibration_features(raw["chars"], raw["mean_best"]), "line")
        else:
            line_confidence = math.exp(raw["mean_best"])
        return DecodedLine(text=text, confidence=line_confidence, words=tuple(words), chars=tuple(chars))
