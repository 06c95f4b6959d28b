"""The training objective, in one place for the trainer, the debugger and the benchmarks.

``forward`` runs the model (capturing InterCTC's intermediate outputs when asked),
``feasible_rows`` picks the samples CTC can align (``T >= len(label) + adjacent repeats``), and
``compute_loss`` is the loss of one training batch: CTC over the feasible samples (plus InterCTC
terms, and label smoothing when asked: ``text_recognizer/ctc/smoothing.py``), or the per-window
cross-entropy baseline (``--loss nll``). With a ``teacher`` (``--distill-from``), a distillation term keeps the
model's frame posteriors near the teacher's (``distillation_term``): what a model trained on new collections
forgets of the old ones is what its posteriors drift from there.
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
    teacher: torch.nn.Module | None = None,
    distill_weight: float = 0.0,
) -> tuple[torch.Tensor, dict]:
    """Loss of one batch and facts about it. Infeasible CTC samples are left out and counted.

    ``info["used"]``/``info["infeasible"]`` count the samples. With ``interctc`` the loss is
    InterCTC's weighted total, ``info["interctc"]`` maps each captured layer to its own loss (a
    float) and ``info["final_loss"]`` holds the final layer's. With ``label_smoothing`` > 0 the
    final layer's loss is ``(1 - eps) * CTC + eps * KL(uniform || posteriors)`` and
    ``info["ctc_loss"]``/``info["smoothing_loss"]`` hold the two terms (floats), so the plain CTC
    loss stays comparable with unsmoothed runs. With ``teacher``, ``distill_weight`` times
    ``distillation_term`` over every sample of the batch (feasible or not: the teacher's posteriors need no
    alignment) is added, ``info["distill_loss"]`` holds the term and ``info["ctc_loss"]`` the loss before it
    (floats).
    """
    logits, captured = forward(model, batch, interctc)  # (B, T, C)
    frames = line_frames = model.output_lengths(batch.widths)  # (B,)
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
    if teacher is not None:
        with torch.no_grad():
            teacher_logits = teacher(batch.images, batch.widths)  # (B, T, C)
        distill = distillation_term(logits, teacher_logits, line_frames)
        info.setdefault("ctc_loss", float(loss.detach()))
        info["distill_loss"] = float(distill.detach())
        loss = loss + distill_weight * distill
    return loss, info


def distillation_term(logits: torch.Tensor, teacher_logits: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
    """Mean over the real frames (``frames``: ``(B,)`` per line) of KL(teacher || model) between the frame
    posteriors of ``logits`` and ``teacher_logits`` (both ``(B, T, C)``), in float32: 0 where the model
    reads every frame as the teacher does. Learning without forgetting (Li and Hoiem, 2016) on the
    batch's own lines, so no old data has to be kept for it."""
    if logits.shape != teacher_logits.shape:
        raise ValueError(f"the teacher's logits {tuple(teacher_logits.shape)} differ from the model's "
                         f"{tuple(logits.shape)}: it must slide the same windows over the same alphabet")
    log_p = F.log_softmax(logits.float(), dim=-1)  # (B, T, C)
    log_q = F.log_softmax(teacher_logits.float(), dim=-1)  # (B, T, C)
    per_frame = (log_q.exp() * (log_q - log_p)).sum(-1)  # (B, T)
    real = torch.arange(logits.shape[1], device=logits.device)[None, :] < frames.to(logits.device)[:, None]  # (B, T)
    return (per_frame * real).sum() / real.sum().clamp(min=1)


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
