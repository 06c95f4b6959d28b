"""The optimiser and the learning-rate schedule of a run (``--optimizer``, ``--lr``, ``--lr-schedule``, ...).

Why its own module: the two are chosen together from ``config.optim``, saved and restored with every
checkpoint, and compared in ``benchmarks/RESULTS.md`` (RMSprop, Adam, AdamW; cosine, one-cycle); the
training loop only steps them.
"""

from __future__ import annotations

import math

import torch

from training.loop.config import ExperimentConfig


def trainable_parameters(model: torch.nn.Module, freeze: tuple[str, ...]) -> list[torch.nn.Parameter]:
    """``model``'s parameters outside the ``freeze`` parts (``--freeze``: top-level module names), which stop
    taking gradients. Why: a few hundred lines can re-fit a whole network to themselves; holding a part as the
    parent learned it is the usual guard (measured in benchmarks/results/finetuning.md). An unknown name is an
    error that lists the parts there are."""
    inner = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    parts = [name for name, child in inner.named_children() if any(True for _ in child.parameters())]
    unknown = [name for name in freeze if name not in parts]
    if unknown:
        raise ValueError(f"--freeze {' '.join(unknown)}: the model has no such part (its parts: {', '.join(parts)})")
    kept = []
    for name, parameter in inner.named_parameters():
        if name.split(".", 1)[0] in freeze:
            parameter.requires_grad_(False)
        else:
            kept.append(parameter)
    if not kept:
        raise ValueError("--freeze leaves nothing to train")
    return kept


def make_optimizer(model: torch.nn.Module, config: ExperimentConfig) -> torch.optim.Optimizer:
    """``--optimizer``: RMSprop (alpha 0.99), Adam or AdamW over ``model``'s parameters outside ``--freeze``
    (``--weight-decay``)."""
    o = config.optim
    parameters = trainable_parameters(model, tuple(o.freeze))
    if o.optimizer == "rmsprop":
        return torch.optim.RMSprop(parameters, lr=o.lr, weight_decay=o.weight_decay, alpha=0.99, eps=1e-8)
    if o.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=o.lr, weight_decay=o.weight_decay)
    return torch.optim.AdamW(parameters, lr=o.lr, weight_decay=o.weight_decay)


def make_scheduler(optimizer: torch.optim.Optimizer, config: ExperimentConfig, total_steps: int, time_progress=None):
    """Linear warm-up, then constant (``none``), cosine decay to ``--cosine-floor`` or a one-cycle-like ramp to 0.

    Progress through the schedule is counted in steps out of ``total_steps``; with a time budget
    (``--max-minutes``) ``time_progress()`` (elapsed / budget) is used too, whichever is further,
    so a run stopped by its budget has finished its decay instead of stopping at a high rate.
    """
    o = config.optim
    warmup = max(0, o.warmup_steps)
    total = max(total_steps, warmup + 1)

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        if time_progress is not None:
            progress = max(progress, min(1.0, time_progress()))
        if o.lr_schedule == "cosine":
            return o.cosine_floor + (1 - o.cosine_floor) * 0.5 * (1 + math.cos(math.pi * progress))
        if o.lr_schedule == "onecycle":
            return max(0.0, 1.0 - progress)
        return 1.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
