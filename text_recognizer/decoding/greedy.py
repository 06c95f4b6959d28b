"""Greedy (best-path) CTC decoding.

Take the most likely class per frame, merge runs of the same class, drop blanks, and map the ids
to characters with the codec. Returns plain Python strings, never tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from text_recognizer.codec import BLANK_ID, Codec


@dataclass(frozen=True)
class Span:
    """A word or character of a decoded line: its text, a confidence in [0, 1] and where it is.

    ``start``/``end`` are x positions in pixels of the original image (the union of the sliding
    windows of the frames it was read from); ``first_frame``/``last_frame`` are those frames.
    """

    text: str
    confidence: float
    start: float
    end: float
    first_frame: int
    last_frame: int

    def to_dict(self) -> dict:
        return {"text": self.text, "confidence": round(self.confidence, 4),
                "start": round(self.start, 1), "end": round(self.end, 1)}


@dataclass(frozen=True)
class DecodedLine:
    """A decoded line: its text and a confidence in [0, 1], with its words and characters if known.

    ``ctc_decode`` fills only ``text`` and ``confidence``: the geometric mean over the line's frames
    of the best class probability, ``exp(mean_t max_c log p_t(c))``. ``text_recognizer.decoding.decoder``
    also fills ``words`` and ``chars`` (spaces are not characters here) and calibrates the numbers
    (see its docstring for what they mean). ``language`` is the ISO 639-1 code of the language models the
    line was beam-decoded with (``text_recognizer.decoding.language``); ``None`` when none read it (greedy).
    """

    text: str
    confidence: float
    words: tuple[Span, ...] = ()
    chars: tuple[Span, ...] = ()
    language: str | None = None

    def to_dict(self) -> dict:
        """``{text, confidence, words: [{text, confidence, start, end}], chars: [...]}`` (plain JSON types),
        and ``language`` when the line was read with a language's models."""
        record = {"text": self.text, "confidence": round(self.confidence, 4),
                  "words": [w.to_dict() for w in self.words], "chars": [c.to_dict() for c in self.chars]}
        if self.language is not None:
            record["language"] = self.language
        return record


def collapse(ids: list[int], blank: int = BLANK_ID) -> list[int]:
    """Merge adjacent repeats, then drop blanks: ``[1, 1, 0, 1, 2, 2] -> [1, 1, 2]``."""
    out = []
    previous = None
    for i in ids:
        if i != previous and i != blank:
            out.append(i)
        previous = i
    return out


@torch.no_grad()
def ctc_decode(
    logits: torch.Tensor,
    codec: Codec,
    lengths: torch.Tensor | None = None,
    collapse_repeats: bool = True,
) -> list[DecodedLine]:
    """Greedy-decode ``(B, T, C)`` logits (or log-probabilities) into ``B`` lines.

    ``lengths`` (``(B,)``) gives the valid frames of each sample; frames past it are ignored.
    ``collapse_repeats=False`` is for the per-window (NLL) baseline, where each frame is one
    character or padding (id 0) and repeats are real.
    """
    if logits.dim() != 3:
        raise ValueError(f"logits must be (B, T, C), got shape {tuple(logits.shape)}")
    if logits.shape[-1] != codec.num_classes:
        raise ValueError(f"logits have {logits.shape[-1]} classes but the codec has {codec.num_classes}")
    batch, frames, _ = logits.shape
    log_probs = logits.float().log_softmax(-1)  # (B, T, C)
    best_log_prob, best_id = log_probs.max(-1)  # (B, T), (B, T)
    if lengths is None:
        lengths = torch.full((batch,), frames, dtype=torch.int64)
    lengths = lengths.to("cpu").tolist()
    best_id = best_id.cpu().tolist()
    best_log_prob = best_log_prob.cpu()
    lines = []
    for b in range(batch):
        n = int(lengths[b])
        ids = collapse(best_id[b][:n]) if collapse_repeats else [i for i in best_id[b][:n] if i != BLANK_ID]
        confidence = float(best_log_prob[b, :n].mean().exp()) if n > 0 else 0.0
        lines.append(DecodedLine(text=codec.decode(ids), confidence=confidence))
    return lines


def runs(path: Sequence[int]) -> list[tuple[int, int, int]]:
    """Non-blank runs of a frame path as ``(class id, first frame, last frame)``."""
    out: list[tuple[int, int, int]] = []
    for t, i in enumerate(path):
        if i == BLANK_ID:
            continue
        if out and out[-1][0] == i and out[-1][2] == t - 1:
            out[-1] = (i, out[-1][1], t)
        else:
            out.append((i, t, t))
    return out
