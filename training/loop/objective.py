"""The training objective, in one place for the trainer, the debugger and the benchmarks.

``forward`` runs the model (capturing InterCTC's intermediate outputs when asked),
``feasible_rows`` picks the samples CTC can align (``T >= len(label) + adjacent repeats``), and
``compute_loss`` is the loss of one training batch: CTC over the feasible samples (plus InterCTC
terms, and label smoothing when asked: ``text_recognizer/ctc/smoothing.py``), or the per-window
cross-entropy baseline (``--loss nll``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from text_recognizer.ctc import ctc_loss, required_frames
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.ctc.smoothing import smoothed_ctc, smoothing_term
from text_recognizer.data.lines import LineBatch
from training.loop.config import CTC_REDUCTIONS


def forward(model, batch: LineBatch, interctc: InterCTC | None = None) -> tuple[torch.Tensor, dict]:
    """Logits ``(B, T, C)`` and the outputs InterCTC captured on the way (``{}`` without InterCTC)."""
    if interctc is None:
        return model(batch.images, batch.widths), {}
    with interctc.capture(model) as captured:
        logits = model(batch.images, batch.widths)  # (B, T, C); fills captured
    return logits, captured


def needed_frames(texts: Sequence[str]) -> torch.Tensor:
    """``(B,)`` int64: the frames CTC needs for each text (its length plus adjacent repeats)."""
    return torch.tensor([required_frames(t) for t in texts], dtype=torch.int64)


def feasible_rows(frames: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
    """Indices (int64, on ``frames``' device) of the samples whose ``frames`` suffice for their text."""
    return (frames >= needed_frames(texts).to(frames.device)).nonzero().flatten()


def compute_loss(
    model,
    batch: LineBatch,
    loss_kind: str,
    ctc_impl: str,
    interctc: InterCTC | None = None,
    label_smoothing: float = 0.0,
    ctc_reduction: str = "line",
) -> tuple[torch.Tensor, dict]:
    """Loss of one batch and facts about it. Infeasible CTC samples are left out and counted.

    ``info["used"]``/``info["infeasible"]`` count the samples. With ``interctc`` the loss is
    InterCTC's weighted total, ``info["interctc"]`` maps each captured layer to its own loss (a
    float) and ``info["final_loss"]`` holds the final layer's. With ``label_smoothing`` > 0 the
    final layer's loss is ``(1 - eps) * CTC + eps * KL(uniform || posteriors)`` and
    ``info["ctc_loss"]``/``info["smoothing_loss"]`` hold the two terms (floats), so the plain CTC
    loss stays comparable with unsmoothed runs.
    """
    logits, captured = forward(model, batch, interctc)  # (B, T, C)
    frames = model.output_lengths(batch.widths)  # (B,)
    if loss_kind == "nll":
        return nll_loss(logits, batch, frames), {"used": len(batch.texts), "infeasible": 0}
    rows = feasible_rows(frames, batch.texts)
    info = {"used": len(rows), "infeasible": len(batch.texts) - len(rows)}
    if len(rows) == 0:
        return logits.sum() * 0.0, info
    idx = rows.to(logits.device)
    targets, frames, lengths = (
        batch.targets[idx],
        frames[rows].to(logits.device),
        batch.target_lengths[rows].to(logits.device),
    )
    kept = logits[idx]  # (B_used, T, C)
    loss = batch_ctc_loss(kept, targets, frames, lengths, ctc_reduction, ctc_impl)
    if label_smoothing > 0:
        smoothing = smoothing_term(kept, frames, lengths)
        info["ctc_loss"], info["smoothing_loss"] = float(loss.detach()), float(smoothing.detach())
        loss = smoothed_ctc(loss, smoothing, label_smoothing)
    if interctc is not None:
        layer_losses = interctc.layer_losses(
            model, captured, targets, frames, lengths, rows=idx, reduction=_TORCH_REDUCTION[ctc_reduction],
            impl=ctc_impl,
        )
        if ctc_reduction == "char":
            layer_losses = {layer: value / lengths.sum() for layer, value in layer_losses.items()}
        info["final_loss"] = float(loss.detach())
        info["interctc"] = {layer: float(value.detach()) for layer, value in layer_losses.items()}
        loss = interctc.combine(loss, layer_losses)
    return loss, info


_TORCH_REDUCTION = {"line": "mean", "char": "sum"}


def batch_ctc_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    frames: torch.Tensor,
    lengths: torch.Tensor,
    reduction: str = "line",
    impl: str = "auto",
) -> torch.Tensor:
    """One batch's CTC loss (a scalar) from ``logits`` ``(B, T, C)``, averaged as ``reduction`` says.

    ``line``: each line's loss divided by its length, then the mean over lines (PyTorch's
    ``reduction="mean"``): a character of a short line weighs more than one of a long line.
    ``char``: the batch's summed loss divided by its total characters, so every character weighs
    the same, as it does in the character error rate we report.
    """
    if reduction not in CTC_REDUCTIONS:
        raise ValueError(f"CTC reduction must be one of {CTC_REDUCTIONS}, got {reduction!r}")
    loss = ctc_loss(logits, targets, frames, lengths, reduction=_TORCH_REDUCTION[reduction], impl=impl)
    return loss / lengths.sum() if reduction == "char" else loss


def nll_loss(logits: torch.Tensor, batch: LineBatch, frames: torch.Tensor) -> torch.Tensor:
    """Per-window cross-entropy: frame k predicts character k, later frames predict padding (0)."""
    b, t, _ = logits.shape
    target = torch.zeros(b, t, dtype=torch.int64)
    for i in range(b):
        n = min(int(batch.target_lengths[i]), t)
        target[i, :n] = batch.targets[i, :n].cpu()
        target[i, int(frames[i]) :] = -100  # frames past the image are not scored
    return F.cross_entropy(logits.transpose(1, 2), target.to(logits.device), ignore_index=-100)  # (B, C, T) vs (B, T)
