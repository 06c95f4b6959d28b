"""Exponential moving average (EMA) of a model's weights, the copy that is validated and shipped.

Why: with a small batch the weights after any one step carry that step's noise; their running
average over the last ~``1 / (1 - decay)`` steps reads better for the same training time
(Polyak averaging), most of all early and in the middle of a run, when the learning rate is still
high. ``--ema-decay 0`` (off) trains and validates the raw weights as before.

The average starts as a copy of the model and follows it with a decay that warms up,
``min(decay, (1 + n) / (10 + n))`` after ``n`` updates, so that the first steps' random weights are
forgotten quickly instead of lingering for thousands of steps. Floating-point buffers (batch-norm
running statistics) are averaged like the weights; integer buffers (batches tracked) are copied.

Under torchrun every process holds the same weights after each step, so every process updates an
identical average without talking to the others.
"""

from __future__ import annotations

import copy

import torch

__all__ = ["WeightAverage"]


class WeightAverage:
    """An EMA copy of ``model`` (``.model``, in eval mode, no gradients), updated after each optimiser step."""

    def __init__(self, model: torch.nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"--ema-decay must be in (0, 1) (0 turns the average off), got {decay}")
        self.decay = decay
        self.updates = 0
        self.model = copy.deepcopy(model).eval()
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)

    def current_decay(self) -> float:
        """The decay of the next update: warms up over the first updates, then ``decay``."""
        return min(self.decay, (1 + self.updates) / (10 + self.updates))

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        """Move the average towards ``model``'s weights (call after each optimiser step)."""
        weight = 1.0 - self.current_decay()
        # state_dict() tensors share storage with the modules: updating them in place updates self.model
        for mine, theirs in zip(self.model.state_dict().values(), model.state_dict().values(), strict=True):
            if mine.dtype.is_floating_point:
                mine.lerp_(theirs, weight)
            else:
                mine.copy_(theirs)
        self.updates += 1

    def state_dict(self) -> dict:
        """What ``last.pt`` keeps so a resumed run continues the same average."""
        return {"decay": self.decay, "updates": self.updates, "model_state": self.model.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.updates = int(state["updates"])
        self.model.load_state_dict(state["model_state"])
