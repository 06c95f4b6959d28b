"""Max-pooling by 2 (or 1) along height and width, fast when no gradient is needed.

PyTorch's CPU ``max_pool2d`` on NCHW tensors also computes the argmax indices that backward needs,
even under ``torch.inference_mode``: on a 1,024-px line at 40 px it took ~4 ms of a ~20 ms decode.
Without gradients the same values come from the element-wise maximum of two strided views per
pooled axis (~0.3 ms; exact, since a max is a max). Training keeps ``max_pool2d`` (its backward is
faster than the strided maxima's), and so do TorchScript tracing and ONNX export, so exported
graphs hold one standard ``MaxPool`` node.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MaxPool(nn.Module):
    """``max_pool2d`` with kernel = stride = ``(height, width)``, each 1 or 2; odd sizes drop the last row/column."""

    def __init__(self, height: int = 2, width: int = 2):
        super().__init__()
        if height not in (1, 2) or width not in (1, 2):
            raise ValueError(f"MaxPool pools by 1 or 2 along each axis, got ({height}, {width})")
        self.kernel = (height, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` -> ``(B, C, H // height, W // width)``."""
        if x.requires_grad or torch.jit.is_tracing() or torch.jit.is_scripting():
            return F.max_pool2d(x, self.kernel)  # (B, C, H', W')
        height, width = self.kernel
        if height == 2:
            x = torch.maximum(x[:, :, 0:-1:2], x[:, :, 1::2])  # (B, C, H // 2, W): rows 0, 2, .. against 1, 3, ..
        if width == 2:
            x = torch.maximum(x[..., 0:-1:2], x[..., 1::2])  # (B, C, H', W // 2)
        return x

    def extra_repr(self) -> str:
        return f"kernel={self.kernel}"
