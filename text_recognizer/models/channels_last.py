"""A convolution that computes in channels-last (NHWC) layout but stores its weight as usual.

A convolution takes its output layout from its weight, so a channels-last weight makes the whole
conv stage (batch norm, ReLU, max-pool and every backward pass) run on NHWC activations, where
PyTorch's CPU kernels for pooling and batch norm are vectorised over channels. On the 2-core CPU a
training step of the recipe model is 1.09x faster on ~700-px lines (`benchmarks/train_bench.py
--layouts`) and up to ~1.45x on 1,000-px lines in bf16, where the conv stages' share is larger
(`benchmarks/RESULTS.md`, "... channels-last conv stages"); decode time is unchanged.

Converting the (tiny) weight on every call instead of storing it channels-last keeps parameters,
state dicts and checkpoints in the default contiguous layout, so code that reshapes them with
``view`` and checkpoints written before this change behave exactly as before. The input layout
cannot carry the choice: a one-channel ``(B, 1, H, W)`` image is contiguous in both layouts.
"""

from __future__ import annotations

import torch
from torch import nn


class ChannelsLastConv2d(nn.Conv2d):
    """``nn.Conv2d`` whose output is channels-last; parameters and state dict are unchanged."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C_in, H, W)`` any layout -> ``(B, C_out, H', W')`` stored channels-last."""
        # clone, not contiguous(): with one input channel the default strides already count as
        # channels-last, contiguous() would return them unchanged and the output would stay NCHW
        weight = self.weight.clone(memory_format=torch.channels_last)  # (C_out, C_in, k, k), NHWC strides
        return self._conv_forward(x, weight, self.bias)  # (B, C_out, H', W')
