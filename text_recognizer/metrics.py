"""Character and word error rates, corpus level.

CER = total character edits / total reference characters, over the whole set (not the mean of
per-line rates, which over-weights short lines). WER is the same over whitespace-separated words.
Edit distances come from ``rapidfuzz`` (Levenshtein: insertions, deletions, substitutions).
"""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz.distance import Levenshtein


def char_edits(reference: str, prediction: str) -> int:
    """Levenshtein distance between two strings, in characters."""
    return Levenshtein.distance(reference, prediction)


def word_edits(reference: str, prediction: str) -> int:
    """Levenshtein distance between the word sequences of two strings."""
    return Levenshtein.distance(reference.split(), prediction.split())


def line_cer(reference: str, prediction: str) -> float:
    """CER of one line; an empty reference gives 0 if the prediction is empty, else 1 per character."""
    if not reference:
        return float(len(prediction) > 0)
    return char_edits(reference, prediction) / len(reference)


def _check(references: Sequence[str], predictions: Sequence[str]) -> None:
    if len(references) != len(predictions):
        raise ValueError(
            f"got {len(references)} references but {len(predictions)} predictions; they must pair up"
        )


def cer(references: Sequence[str], predictions: Sequence[str]) -> float:
    """Corpus-level character error rate (0 for an empty corpus)."""
    _check(references, predictions)
    total = sum(len(r) for r in references)
    edits = sum(char_edits(r, p) for r, p in zip(references, predictions))
    return edits / total if total else float(edits > 0)


def wer(references: Sequence[str], predictions: Sequence[str]) -> float:
    """Corpus-level word error rate (0 for an empty corpus)."""
    _check(references, predictions)
    total = sum(len(r.split()) for r in references)
    edits = sum(word_edits(r, p) for r, p in zip(references, predictions))
    return edits / total if total else float(edits > 0)
