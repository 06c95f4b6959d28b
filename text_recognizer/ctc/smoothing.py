"""Label smoothing for CTC: pull every frame's posterior a little towards the uniform distribution.

Why: with cross-entropy, label smoothing replaces each one-hot target by ``(1 - eps) * onehot +
eps * uniform`` and keeps a model from becoming over-confident on small data. CTC has no per-frame
targets, but its gradient with respect to the logits of frame ``t`` is ``p_t - gamma_t``, where
``gamma_t`` is the posterior of the alignments at that frame (the soft target CTC infers). The
gradient of ``KL(u || p_t) = -log C - (1/C) sum_c log p_t(c)`` is ``p_t - u``. So

    loss_i = (1 - eps) * CTC_i + eps * sum_{t < T_i} KL(u || p_t)

has the per-frame gradient ``p_t - ((1 - eps) * gamma_t + eps * u)``: exactly label smoothing of
CTC's own soft targets. Both terms are divided by the target length (clamped to 1) before the batch
mean, as ``ctc_loss(reduction="mean")`` does, so ``eps`` means the same for every line length.
"""

from __future__ import annotations

import math

import torch

from text_recognizer.models.blocks import length_mask


def check_smoothing(eps: float) -> None:
    """Raise ``ValueError`` unless ``eps`` is in ``[0, 1)`` (0: off; 1 would ignore the labels)."""
    if not 0.0 <= eps < 1.0:  # also false for NaN
        raise ValueError(f"label smoothing must be in [0, 1) (0: off), got {eps}")


def uniform_kl(logits: torch.Tensor, input_lengths: torch.Tensor) -> torch.Tensor:
    """``(B,)``: ``sum_{t < T_i} KL(u || softmax(logits[i, t]))``, frames past ``T_i`` ignored.

    Computed in float32 (at least) from raw ``(B, T, C)`` logits; always finite for finite logits.
    """
    if logits.dim() != 3:
        raise ValueError(f"logits must be (B, T, C), got shape {tuple(logits.shape)}")
    b, t, c = logits.shape
    if input_lengths.shape != (b,):
        raise ValueError(f"input_lengths must be ({b},), got shape {tuple(input_lengths.shape)}")
    dtype = torch.promote_types(logits.dtype, torch.float32)
    log_probs = logits.to(dtype).log_softmax(dim=-1)  # (B, T, C)
    per_frame = -log_probs.mean(dim=-1) - math.log(c)  # (B, T): KL(u || p_t) >= 0
    valid = length_mask(input_lengths, t, logits.device)  # (B, T)
    return (per_frame * valid).sum(dim=1)  # (B,)


def smoothing_term(logits: torch.Tensor, input_lengths: torch.Tensor, target_lengths: torch.Tensor) -> torch.Tensor:
    """Scalar: the batch mean of ``uniform_kl / max(target_length, 1)`` (CTC's ``"mean"`` scaling)."""
    per_sample = uniform_kl(logits, input_lengths)  # (B,)
    return (per_sample / target_lengths.to(per_sample).clamp(min=1)).mean()


def smoothed_ctc(ctc_mean: torch.Tensor, smoothing: torch.Tensor, eps: float) -> torch.Tensor:
    """``(1 - eps) * ctc_mean + eps * smoothing``: the training loss with label smoothing ``eps``."""
    check_smoothing(eps)
    return (1.0 - eps) * ctc_mean + eps * smoothing
