"""The non-finite guard: a training step whose loss or gradient is ``inf``/``nan`` never updates the model.

``fit`` uses it like this, once per step::

    guard.before_step(model, rng_state)        # remembers buffers (BatchNorm statistics) and RNG state
    loss = ...; loss.backward() if finite ...  # the ordinary step
    problem = guard.check(model, loss, grad_norm)
    if problem is None:  optimizer.step() ...   # a good step
    else:                guard.record(problem, ...)  # skip: restore buffers, dump, log; maybe stop

A bad step is skipped (no optimiser or scheduler step), counted, logged (``metrics.jsonl`` and every
logger's ``log_event``, so W&B too) and dumped to ``<run_dir>/bad_steps/step_<N>.pt``: the batch
(images, widths, targets, lengths, texts), the step, the loss, which gradients were non-finite, the
RNG state before the step, the model exactly as the step saw it, and a reference to the last
checkpoint (which holds the optimiser state; a skipped step does not change it). The dump is a
valid checkpoint (``text_recognizer.checkpoint``: the run's bundle with the step's weights, the rest in
``extra``), so ``python -m training.loop.debug replay DUMP`` can reproduce the step without anything else.

After ``max_bad_steps`` consecutive bad steps ``should_stop()`` is true and ``fit`` saves ``last.pt``
and raises ``TrainingError(guard.stop_message(...))``, which names the dumps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from text_recognizer.checkpoint import Checkpoint, save_checkpoint

DUMP_DIR = "bad_steps"
DUMP_KIND = "text_recognizer.bad_step"


@dataclass
class Problem:
    """Why a step is bad: a non-finite loss, and/or the names of parameters with non-finite gradients."""

    loss: float
    loss_finite: bool
    grad_norm: float | None = None
    nonfinite_grads: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if not self.loss_finite:
            return f"non-finite loss {self.loss}"
        names = ", ".join(self.nonfinite_grads[:3]) + (" ..." if len(self.nonfinite_grads) > 3 else "")
        return f"non-finite gradient (norm {self.grad_norm}) in {len(self.nonfinite_grads)} parameter(s): {names}"


def dump_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / DUMP_DIR / f"step_{step:07d}.pt"


class NonFiniteGuard:
    """Skips, counts, logs and dumps non-finite training steps; stops after too many in a row.

    Args:
        run_dir: the run directory; dumps go to ``run_dir/bad_steps/``.
        max_bad_steps: consecutive bad steps after which ``should_stop()`` is true; 0 never stops.
        loggers: receive ``log_event(step, {"event": "bad_step", ...})`` for every bad step.
        max_dumps: at most this many dump files per run (later bad steps are still counted and logged).
    """

    def __init__(self, run_dir: Path, max_bad_steps: int, loggers=(), max_dumps: int = 20):
        if max_bad_steps < 0:
            raise ValueError(f"max_bad_steps must be >= 0, got {max_bad_steps}")
        self.run_dir = Path(run_dir)
        self.max_bad_steps = max_bad_steps
        self.loggers = list(loggers)
        self.max_dumps = max_dumps
        self.consecutive = 0
        self.streak_dumps: list[Path] = []
        self._buffers: list[torch.Tensor] = []
        self._rng: dict | None = None

    def before_step(self, model: torch.nn.Module, rng_state: dict) -> None:
        """Remember what a skipped step must restore (buffers) or dump (RNG state). Cheap: buffers are small."""
        self._buffers = [b.detach().clone() for b in model.buffers()]
        self._rng = rng_state

    @staticmethod
    def check(model: torch.nn.Module, loss: torch.Tensor, grad_norm: torch.Tensor | None) -> Problem | None:
        """``None`` for a good step. ``grad_norm`` is the total norm (``None`` when backward was skipped)."""
        loss_value = float(loss.detach())
        if not math.isfinite(loss_value):
            return Problem(loss_value, False)
        norm = float(grad_norm) if grad_norm is not None else float("nan")
        if math.isfinite(norm):
            return None
        bad = [name for name, p in model.named_parameters()
               if p.grad is not None and not bool(torch.isfinite(p.grad).all())]
        return Problem(loss_value, True, norm, bad)

    def good_step(self) -> None:
        self.consecutive = 0
        self.streak_dumps = []

    def record(self, problem: Problem, *, model, optimizer, batch, step: int, epoch: int, batch_in_epoch: int,
               total_bad: int, bundle: Checkpoint, checkpoint: Path | None) -> Path | None:
        """Handle a bad step: restore buffers, drop gradients, write the dump, log; return the dump path.

        ``bundle`` is the run's checkpoint (model config, codec, decoding, recipe; its weights are
        replaced by the model's as the step saw them); ``checkpoint`` is the last saved ``last.pt`` (or ``None``).
        """
        with torch.no_grad():
            for buffer, saved in zip(model.buffers(), self._buffers):
                buffer.copy_(saved)
        optimizer.zero_grad(set_to_none=True)
        self.consecutive += 1
        path = None
        if total_bad <= self.max_dumps:
            path = dump_path(self.run_dir, step)
            save_checkpoint(bundle.replace(train_state=None, model_state=model.state_dict(), extra={
                "kind": DUMP_KIND,
                "step": step, "epoch": epoch, "batch_in_epoch": batch_in_epoch,
                "loss_value": problem.loss, "loss_finite": problem.loss_finite,
                "grad_norm": problem.grad_norm, "nonfinite_grads": list(problem.nonfinite_grads),
                "reason": problem.describe(),
                "batch": {
                    "images": batch.images.detach().cpu(), "widths": batch.widths.detach().cpu(),
                    "targets": batch.targets.detach().cpu(), "target_lengths": batch.target_lengths.detach().cpu(),
                    "texts": list(batch.texts),
                },
                "rng": self._rng,
                "device": str(batch.images.device),
                "lr": [group["lr"] for group in optimizer.param_groups],
                "checkpoint": str(checkpoint) if checkpoint is not None and Path(checkpoint).exists() else None,
            }), path)
            self.streak_dumps.append(path)
        event = {"event": "bad_step", "bad_steps": total_bad, "consecutive_bad_steps": self.consecutive,
                 "loss": problem.loss if problem.loss_finite else str(problem.loss),
                 "nonfinite_grads": len(problem.nonfinite_grads), "reason": problem.describe(),
                 "dump": str(path) if path else None}
        for logger in self.loggers:
            logger.log_event(step, event)
        where = f"; dumped to {path}" if path else f" (no dump: more than {self.max_dumps} already)"
        print(f"warning: step {step} skipped: {problem.describe()} "
              f"[{self.consecutive} in a row, {total_bad} in this run]{where}")
        return path

    def should_stop(self) -> bool:
        return bool(self.max_bad_steps) and self.consecutive >= self.max_bad_steps

    def stop_message(self, step: int, last_checkpoint: Path) -> str:
        dumps = list(self.streak_dumps)
        listed = "\n".join(f"  {p}" for p in dumps) or "  (none written: the dump limit was reached)"
        first = dumps[0] if dumps else "DUMP"
        return (
            f"{self.consecutive} consecutive training steps (up to step {step}) had a non-finite loss or gradient "
            f"(--max-bad-steps {self.max_bad_steps}); their updates were skipped. Dumps:\n{listed}\n"
            f"Reproduce and locate the cause with: python -m training.loop.debug replay {first} --trace\n"
            f"Compare the CTC implementations with: python -m training.loop.debug crosscheck {first}\n"
            f"{last_checkpoint} holds the model before the first of these steps; continue with --resume once fixed."
        )


# -- blank collapse ---------------------------------------------------------------------------------

#: Predictions count as "(almost) all blank" from this share on (see ``blank_share``).
COLLAPSE_SHARE = 0.95


def blank_share(references: list[str], predictions: list[str]) -> float:
    """How blank validation predictions are, in [0, 1]: the larger of the share of empty predictions
    and the share of reference characters with no predicted counterpart (1 - predicted / reference
    characters, floored at 0). A model that emits one character per line scores close to 1 too."""
    if not predictions:
        return 0.0
    empty = sum(not p.strip() for p in predictions) / len(predictions)
    reference_chars = sum(len(r) for r in references)
    missing = max(0.0, 1.0 - sum(len(p) for p in predictions) / reference_chars) if reference_chars else 0.0
    return max(empty, missing)


def collapse_advice(config, epochs: int, steps: int, share: float, frames_per_frame_needed: float | None) -> str:
    """The blank-collapse warning, with suggestions that use the run's own settings."""
    o, m = config.optim, config.model
    lines = [f"warning: validation predictions have been (almost) all blank for {epochs} epochs "
             f"(blank share {share:.2f} >= {COLLAPSE_SHARE}; {steps} steps so far). Early blank-only output is normal "
             "for CTC; staying there usually is not. Things to try:"]
    if o.lr <= 0:
        lines.append(f"  - learning rate: --lr is {o.lr}: nothing can be learned; use e.g. --lr 1e-3")
    else:
        lines.append(f"  - learning rate: --lr {o.lr:g} may be too high (try {o.lr / 3:.2g}) or too low if the "
                     f"training loss is flat (try {o.lr * 3:.2g}); a longer warm-up helps "
                     f"(--warmup-steps {max(200, 2 * o.warmup_steps)}, now {o.warmup_steps})")
    if o.optimizer in ("adam", "adamw"):
        lines.append(f"  - optimizer: --optimizer {o.optimizer}; RMSprop (--optimizer rmsprop) leaves the all-blank "
                     "phase sooner on some small models at high learning rates (docs/experiments.md)")
    else:
        lines.append("  - optimizer: rmsprop already; check --grad-clip (now "
                     f"{o.grad_clip:g}) and --weight-decay (now {o.weight_decay:g}); "
                     "Adam (--optimizer adam, the default) is an alternative")
    if frames_per_frame_needed is not None:
        advice = (f"  - window stride: --window-stride {m.window_stride} px gives {frames_per_frame_needed:.1f} frames "
                  "per frame the labels need (len + repeats) on validation lines")
        if frames_per_frame_needed < 2.0:
            advice += ("; below ~2 CTC has little room for blanks: lower --window-stride "
                       f"(e.g. {max(1, m.window_stride // 2)})")
        lines.append(advice)
    lines.append("  - data: check that labels match their images "
                 "(python -m training.loop.debug on a dump, or look at the val samples)")
    return "\n".join(lines)
