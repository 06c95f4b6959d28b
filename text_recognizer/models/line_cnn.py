"""The sliding-window CNN: the line is cut into overlapping windows and one CNN reads each.

With window width ``w`` and stride ``s`` an image of width ``W`` gives
``T = (W - w) // s + 1`` windows (images narrower than ``w`` are padded to ``w``: one window).
Each window becomes one output frame, so ``T`` is also the CTC input length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from text_recognizer.models.blocks import Encoder
from text_recognizer.models.config import ModelConfig


@dataclass(frozen=True)
class WindowGeometry:
    """Window width and stride, and the frame count they give for an image width."""

    width: int
    stride: int

    def num_frames(self, image_width: int) -> int:
        """``T`` for an image ``image_width`` pixels wide (at least one window)."""
        return (max(int(image_width), self.width) - self.width) // self.stride + 1

    def frames(self, image_widths: torch.Tensor) -> torch.Tensor:
        """Vectorised ``num_frames`` for a ``(B,)`` int tensor of widths."""
        return (image_widths.clamp_min(self.width) - self.width) // self.stride + 1

    def min_width(self, frames: int) -> int:
        """The narrowest image that yields at least ``frames`` windows."""
        return self.width + max(frames - 1, 0) * self.stride


class WindowCNN(nn.Module):
    """A small CNN that turns one ``(1, H, w)`` window into a ``feature_dim`` vector."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        stages = []
        in_channels = 1
        for out_channels in config.cnn_channels:
            stages += [
                nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            ]
            in_channels = out_channels
        self.conv = nn.Sequential(*stages)
        shrink = 2 ** len(config.cnn_channels)
        flat = in_channels * (config.height // shrink) * (config.window_width // shrink)
        self.project = nn.Linear(flat, config.feature_dim)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        features = self.conv(windows)  # (N, 1, H, w) -> (N, c, H/2^k, w/2^k)
        return F.relu(self.project(features.flatten(1)))  # (N, feature_dim)


class LineCNN(nn.Module):
    """Window CNN + residual temporal-conv blocks + linear head: logits ``(B, T, C)``.

    The plain sliding-window baseline (``--model line_cnn``); ``CRNN`` adds BiLSTM blocks.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.geometry = WindowGeometry(config.window_width, config.window_stride)
        self.window_cnn = WindowCNN(config)
        self.encoder = Encoder(config)
        self.head_dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.feature_dim, config.num_classes)

    def output_lengths(self, image_widths: torch.Tensor) -> torch.Tensor:
        """Frames produced for each image width (``(B,)`` int64)."""
        return self.geometry.frames(image_widths)

    def windows(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, 1, H, W)`` -> ``(B, T, 1, H, w)`` overlapping windows via ``Tensor.unfold``."""
        if images.dim() != 4 or images.shape[1] != 1:
            raise ValueError(f"images must be (B, 1, H, W), got shape {tuple(images.shape)}")
        if images.shape[2] != self.config.height:
            raise ValueError(f"images must be {self.config.height} px high, got {images.shape[2]}")
        w = self.geometry.width
        if images.shape[3] < w:
            images = F.pad(images, (0, w - images.shape[3]))  # (B, 1, H, w)
        patches = images.unfold(3, w, self.geometry.stride)  # (B, 1, H, T, w)
        return patches.permute(0, 3, 1, 2, 4)  # (B, T, 1, H, w)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """Per-window features ``(B, T, D)`` before the encoder blocks."""
        windows = self.windows(images)  # (B, T, 1, H, w)
        b, t = windows.shape[:2]
        flat = windows.reshape(b * t, *windows.shape[2:])  # (B*T, 1, H, w)
        return self.window_cnn(flat).view(b, t, -1)  # (B, T, D)

    def frame_lengths(self, images: torch.Tensor, widths: torch.Tensor | None) -> torch.Tensor:
        """Valid frames per line: from ``widths`` (unpadded image widths) or the full batch width."""
        if widths is None:
            widths = torch.full((images.shape[0],), images.shape[-1], dtype=torch.int64)
        if widths.shape != (images.shape[0],):
            raise ValueError(f"widths must have shape ({images.shape[0]},), got {tuple(widths.shape)}")
        return self.output_lengths(widths.cpu().clamp(max=images.shape[-1]))

    def forward(self, images: torch.Tensor, widths: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(B, T, C)``; ``widths`` (``(B,)``) are the unpadded image widths of a padded batch."""
        lengths = self.frame_lengths(images, widths)  # (B,)
        x = self.features(images)  # (B, 1, H, W) -> (B, T, D)
        x = self.encoder(x, lengths)  # (B, T, D)
        return self.head(self.head_dropout(x))  # (B, T, C)
