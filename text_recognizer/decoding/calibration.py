"""Confidence calibration: logistic maps from raw decoder scores to probabilities, and how to check them.

Why: raw CTC posteriors are over-confident and do not say what a user wants to know. A logistic
map (Platt scaling) per level is fit on held-out lines (the tuning half of IAM val for the bundled
model) so that

- a **character**'s confidence estimates the probability that the character is right;
- a **word**'s confidence estimates the probability that the word is exactly right;
- a **line**'s confidence estimates the fraction of its characters read right (``1 - CER``).

``expected_calibration_error`` and ``reliability_table`` measure how well that holds on other lines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def _check_weights(model: dict, features: Sequence[float], level: str) -> None:
    if not isinstance(model, dict) or "weights" not in model or "bias" not in model:
        raise ValueError(f"calibration for {level} must be {{'weights': [...], 'bias': b}}, got {model!r}")
    if len(model["weights"]) != len(features):
        raise ValueError(f"calibration for {level} has {len(model['weights'])} weights for {len(features)} features")


def apply(model: dict, features: Sequence[float], level: str = "?") -> float:
    """``sigmoid(w . features + b)`` for one item."""
    _check_weights(model, features, level)
    z = float(model["bias"]) + sum(float(w) * float(x) for w, x in zip(model["weights"], features))
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


def fit(features: Sequence[Sequence[float]], targets: Sequence[float], steps: int = 200) -> dict:
    """Fit a logistic map by maximum likelihood (targets in [0, 1]; fractions allowed)."""
    x = torch.tensor(features, dtype=torch.float64)
    y = torch.tensor(targets, dtype=torch.float64)
    if x.dim() != 2 or x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError(f"features must be (N >= 2, k) and targets (N,), got {tuple(x.shape)} and {tuple(y.shape)}")
    if bool(((y < 0) | (y > 1)).any()):
        raise ValueError("targets must lie in [0, 1]")
    mean, std = x.mean(0), x.std(0).clamp_min(1e-6)
    z = (x - mean) / std  # standardise for a well-conditioned fit, fold back afterwards
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + 1e-6 * (w * w).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    weights = (w.detach() / std).tolist()
    bias = float(b.detach() - (w.detach() * mean / std).sum())
    return {"weights": weights, "bias": bias}


def word_correctness(reference: str, prediction: str) -> list[bool]:
    """For each word of ``prediction``: is it aligned with an identical word of ``reference``?"""
    ref, hyp = reference.split(), prediction.split()
    correct = [False] * len(hyp)
    for _, _, dest in _matches(ref, hyp):
        correct[dest] = True
    return correct


def _matches(ref: list[str], hyp: list[str]) -> list[tuple[str, int, int]]:
    """Word pairs a minimal word-level edit script keeps unchanged."""
    from rapidfuzz.distance import Levenshtein  # measuring only: the serving image does not need it

    out = []
    for block in Levenshtein.opcodes(ref, hyp):
        if block.tag == "equal":
            for k in range(block.src_end - block.src_start):
                out.append(("equal", block.src_start + k, block.dest_start + k))
    return out


def char_correctness(reference: str, prediction: str) -> list[bool]:
    """For each character of ``prediction`` (spaces included): kept unchanged by a minimal edit script?"""
    from rapidfuzz.distance import Levenshtein

    correct = [False] * len(prediction)
    for block in Levenshtein.opcodes(reference, prediction):
        if block.tag == "equal":
            for k in range(block.dest_start, block.dest_end):
                correct[k] = True
    return correct


def reliability_table(confidences: Sequence[float], outcomes: Sequence[float], bins: int = 10) -> list[dict]:
    """Equal-width confidence bins: ``{low, high, n, confidence (mean), accuracy (mean outcome)}``."""
    if len(confidences) != len(outcomes):
        raise ValueError(f"confidences ({len(confidences)}) and outcomes ({len(outcomes)}) differ in length")
    rows = []
    for k in range(bins):
        low, high = k / bins, (k + 1) / bins
        idx = [i for i, c in enumerate(confidences) if low <= c < high or (k == bins - 1 and c == 1.0)]
        if idx:
            rows.append({"low": low, "high": high, "n": len(idx),
                         "confidence": sum(confidences[i] for i in idx) / len(idx),
                         "accuracy": sum(float(outcomes[i]) for i in idx) / len(idx)})
    return rows


def expected_calibration_error(confidences: Sequence[float], outcomes: Sequence[float], bins: int = 10) -> float:
    """Sum over bins of (share of items) x |mean confidence - mean outcome|."""
    rows = reliability_table(confidences, outcomes, bins)
    total = sum(row["n"] for row in rows)
    if total == 0:
        raise ValueError("no items to measure calibration on")
    return sum(row["n"] / total * abs(row["confidence"] - row["accuracy"]) for row in rows)
