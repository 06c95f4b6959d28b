"""Intermediate CTC (InterCTC; Lee & Watanabe, ICASSP 2021, arXiv 2102.03216).

The outputs of some encoder blocks are passed through the model's own output head (the encoder's
final ``LayerNorm``, the head dropout and the linear head: the same weights as the final layer) and
get their own CTC loss. With captured layers ``k`` and weights ``w_k``::

    total = (1 - sum(w)) * L_final + sum(w_k * L_k)

Layers are numbered 1..N over ``model.encoder.block_names`` (``conv1``, ..., ``lstm1``, ...).

Captured outputs live only inside ``with interctc.capture(model) as captured:``: forward hooks are
registered on the chosen blocks when the block is entered and removed when it exits, and the outputs
go into the dict it yields, never onto a module. Outside that block (evaluation, inference, serving)
nothing is hooked or kept. Typical training step::

    with interctc.capture(model) as captured:
        logits = model(images, widths)                                 # (B, T, C); fills captured
    final = ctc_loss(logits, targets, frames, target_lengths)
    layer_losses = interctc.layer_losses(model, captured, targets, frames, target_lengths)
    loss = interctc.combine(final, layer_losses)

Model interface used: ``model.encoder.blocks`` (a ``ModuleDict`` of blocks in order),
``model.encoder.norm``, ``model.head_dropout`` and ``model.head`` (``nn.Linear``). All our encoder
blocks are ``feature_dim`` wide, the head's input width, so no projection is needed; a captured
output of another width raises a ``ValueError`` (a projection would add weights to the model and
its checkpoint, and none of our architectures needs one).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from text_recognizer.ctc.loss import ctc_loss


class InterCTC:
    """Which encoder layers get an intermediate CTC loss, and with which weights."""

    def __init__(self, layers: Sequence[int], weights: Sequence[float]):
        layers, weights = tuple(layers), tuple(weights)
        if len(layers) != len(weights):
            raise ValueError(
                f"interctc: give one weight per layer; got {len(layers)} layers {list(layers)} "
                f"and {len(weights)} weights {list(weights)}"
            )
        if not layers:
            raise ValueError(
                "interctc: no layers given (use --interctc-layers, e.g. 2 4, with as many --interctc-weights)")
        for layer in layers:
            if isinstance(layer, bool) or not isinstance(layer, int) or layer < 1:
                raise ValueError(f"interctc layers are encoder block numbers >= 1, got {layer!r} in {list(layers)}")
        if len(set(layers)) != len(layers):
            raise ValueError(f"interctc layers must be distinct, got {list(layers)}")
        for weight in weights:
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 < weight < 1.0:
                raise ValueError(f"interctc weights must each be in (0, 1), got {weight!r} in {list(weights)}")
        if sum(weights) >= 1.0:
            raise ValueError(
                f"interctc weights must sum to less than 1 (the final layer keeps 1 - sum), "
                f"got {list(weights)} summing to {sum(weights):g}"
            )
        self.layers: tuple[int, ...] = tuple(int(x) for x in layers)
        self.weights: tuple[float, ...] = tuple(float(w) for w in weights)

    def __repr__(self) -> str:
        return f"InterCTC(layers={list(self.layers)}, weights={list(self.weights)})"

    @classmethod
    def from_settings(cls, layers: Sequence[int], weights: Sequence[float]) -> InterCTC | None:
        """``None`` when no layers and no weights are given (InterCTC off), else a validated ``InterCTC``."""
        if not layers and not weights:
            return None
        return cls(layers, weights)

    # -- layers ---------------------------------------------------------------------------------

    def check_layers(self, block_names: Sequence[str]) -> None:
        """Raise ``ValueError`` if a layer is not one of the encoder's blocks ``1..len(block_names)``."""
        n = len(block_names)
        missing = [layer for layer in self.layers if layer > n]
        if missing:
            listing = ", ".join(f"{i + 1}={name}" for i, name in enumerate(block_names)) or "none"
            raise ValueError(
                f"interctc layers {missing} do not exist: the encoder has {n} blocks, numbered 1..{n} ({listing})"
            )

    def block_names(self, model: nn.Module) -> dict[int, str]:
        """Captured layer number -> block name in ``model``'s encoder (validated)."""
        names = list(model.encoder.blocks.keys())
        self.check_layers(names)
        return {layer: names[layer - 1] for layer in self.layers}

    def metric_names(self, model: nn.Module) -> dict[int, str]:
        """Captured layer -> metric prefix, e.g. ``interctc_lstm1`` (``..._loss``, ``..._cer`` follow)."""
        return {layer: f"interctc_{name}" for layer, name in self.block_names(model).items()}

    # -- capture --------------------------------------------------------------------------------

    @contextmanager
    def capture(self, model: nn.Module) -> Iterator[dict[int, torch.Tensor]]:
        """Hook the captured blocks for the duration of the ``with`` block; yields layer -> ``(B, T, D)``.

        Each forward pass inside the block overwrites the entries. The hooks are removed on exit,
        even on an exception; the dict is the only place the outputs are kept.
        """
        captured: dict[int, torch.Tensor] = {}
        blocks = model.encoder.blocks
        handles = []
        try:
            for layer, name in self.block_names(model).items():
                handles.append(blocks[name].register_forward_hook(_store(captured, layer)))
            yield captured
        finally:
            for handle in handles:
                handle.remove()

    # -- losses ---------------------------------------------------------------------------------

    @staticmethod
    def head_logits(model: nn.Module, features: torch.Tensor) -> torch.Tensor:
        """A captured block output ``(B, T, D)`` through the final layer's head -> logits ``(B, T, C)``."""
        head = model.head
        if features.shape[-1] != head.in_features:
            raise ValueError(
                f"interctc: a captured output has {features.shape[-1]} features but the output head takes "
                f"{head.in_features}; a projection would be needed, and this model has none"
            )
        x = model.encoder.norm(features)  # (B, T, D)
        return head(model.head_dropout(x))  # (B, T, C)

    def layer_logits(self, model: nn.Module, captured: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """Logits ``(B, T, C)`` of every captured layer."""
        absent = [layer for layer in self.layers if layer not in captured]
        if absent:
            raise ValueError(f"interctc: layers {absent} were not captured; run the model inside capture(model)")
        return {layer: self.head_logits(model, captured[layer]) for layer in self.layers}

    def layer_losses(
        self,
        model: nn.Module,
        captured: dict[int, torch.Tensor],
        targets: torch.Tensor,
        input_lengths: torch.Tensor,
        target_lengths: torch.Tensor,
        *,
        rows: torch.Tensor | None = None,
        reduction: str = "mean",
        zero_infinity: bool = False,
        impl: str = "auto",
    ) -> dict[int, torch.Tensor]:
        """CTC loss of every captured layer; ``rows`` selects batch samples (as for the final loss)."""
        losses = {}
        for layer, logits in self.layer_logits(model, captured).items():
            if rows is not None:
                logits = logits[rows]  # (B', T, C)
            losses[layer] = ctc_loss(logits, targets, input_lengths, target_lengths,
                                     reduction=reduction, zero_infinity=zero_infinity, impl=impl)
        return losses

    def combine(self, final_loss: torch.Tensor, layer_losses: dict[int, torch.Tensor]) -> torch.Tensor:
        """``(1 - sum(w)) * final_loss + sum(w_k * layer_losses[k])``."""
        total = (1.0 - sum(self.weights)) * final_loss
        for layer, weight in zip(self.layers, self.weights):
            total = total + weight * layer_losses[layer]
        return total


def _store(captured: dict[int, torch.Tensor], layer: int):
    def hook(module: nn.Module, inputs, output: torch.Tensor) -> None:
        captured[layer] = output  # (B, T, D)

    return hook
