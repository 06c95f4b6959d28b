"""The sliding-window CNN: the line is read through overlapping windows, one output frame each.

With window width ``w`` and stride ``s`` an image of width ``W`` gives
``T = (W - w) // s + 1`` windows (images narrower than ``w`` are padded to ``w``: one window).
Each window becomes one output frame, so ``T`` is also the CTC input length.

Two ways to compute the window features (``ModelConfig.shared_cnn``):

- per-window (``WindowCNN``): ``Tensor.unfold`` cuts the *pixels* into ``(1, H, w)`` windows and
  one small CNN reads each. Overlapping windows are recomputed: with ``w=16, s=4`` every pixel goes
  through the CNN four times.
- shared (``SharedWindowCNN``, the default): the conv stages run once over the whole line, pooling
  the width by ``s`` in total, and ``Tensor.unfold`` cuts their *feature map* into windows of
  ``w / s`` columns at stride 1. Same frame count and window geometry, a quarter of the CNN work,
  and each window also sees a little context around it through the convolutions' receptive field.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from text_recognizer.models.blocks import Encoder, conv_blocks, length_mask
from text_recognizer.models.channels_last import ChannelsLastConv2d
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.pooling import MaxPool


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
                MaxPool(2, 2),
            ]
            in_channels = out_channels
        self.conv = nn.Sequential(*stages)
        shrink = 2 ** len(config.cnn_channels)
        flat = in_channels * (config.height // shrink) * (config.window_width // shrink)
        self.project = nn.Linear(flat, config.feature_dim)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        features = self.conv(windows)  # (N, 1, H, w) -> (N, c, H/2^k, w/2^k)
        return F.relu(self.project(features.flatten(1)))  # (N, feature_dim)


class SharedWindowCNN(nn.Module):
    """Conv stages over the whole line, then one linear map per window of the feature map.

    Stage ``i`` is conv3x3 + batch norm + ReLU + max-pool (on channels-last activations, see
    ``channels_last``); every stage halves the height, the first
    ``log2(s)`` also halve the width, so the feature map has one column per ``s`` pixels and a
    window of ``w`` pixels is ``w / s`` columns. Columns past a line's own width are zeroed after
    every stage, so a line gets the same features alone as padded in a batch (the convolutions see
    the zeros their own padding would give).
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        width_pools = config.window_stride.bit_length() - 1  # log2(s)
        self.width_factors = [2 if i < width_pools else 1 for i in range(len(config.cnn_channels))]
        stages = []
        in_channels = 1
        for out_channels, width_factor in zip(config.cnn_channels, self.width_factors):
            stages += [
                ChannelsLastConv2d(in_channels, out_channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
                MaxPool(2, width_factor),
            ]
            in_channels = out_channels
        self.conv = nn.Sequential(*stages)
        self.window_columns = config.window_width // config.window_stride
        flat = in_channels * (config.height // 2 ** len(config.cnn_channels)) * self.window_columns
        self.project = nn.Linear(flat, config.feature_dim)

    def forward(self, images: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
        """``(B, 1, H, W)`` images (zero past each width) and ``(B,)`` widths -> ``(B, T, D)`` features."""
        x = images  # (B, 1, H, W)
        for i, width_factor in enumerate(self.width_factors):
            x = self.conv[4 * i : 4 * i + 4](x)  # (B, c_i, H / 2^(i+1), W_i)
            widths = widths // width_factor
            valid = length_mask(widths, x.shape[-1], x.device)[:, None, None, :]  # (B, 1, 1, W_i)
            x = x * valid.to(x.dtype)  # zero past each line's columns
        windows = x.unfold(3, self.window_columns, 1)  # (B, c, H', T, w/s)
        windows = windows.permute(0, 3, 1, 2, 4).flatten(2)  # (B, T, c * H' * w/s)
        return F.relu(self.project(windows))  # (B, T, D)


class LineCNN(nn.Module):
    """Window CNN + residual temporal-conv blocks + linear head: logits ``(B, T, C)``.

    The plain sliding-window baseline (``--model line_cnn``); ``CRNN`` adds BiLSTM blocks by
    overriding :meth:`encoder_blocks`. ``KIND`` is the ``ModelConfig.kind`` a class builds.
    """

    KIND = "line_cnn"

    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.kind != self.KIND:
            raise ValueError(f"{type(self).__name__} needs kind={self.KIND!r}, got {config.kind!r}")
        self.config = config
        self.geometry = WindowGeometry(config.window_width, config.window_stride)
        self.window_cnn = SharedWindowCNN(config) if config.shared_cnn else WindowCNN(config)
        self.encoder = Encoder(self.encoder_blocks(config), config.feature_dim)
        self.head_dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.feature_dim, config.num_classes)

    def encoder_blocks(self, config: ModelConfig) -> dict[str, nn.Module]:
        """The encoder's residual blocks in order: ``conv1..`` (``config.block_names``)."""
        return conv_blocks(config, config.stochastic_depth_probs())

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

    def features(self, images: torch.Tensor, widths: torch.Tensor | None = None) -> torch.Tensor:
        """Per-window features ``(B, T, D)`` before the encoder blocks (``widths``: unpadded image widths).

        Pixels past a line's width are zeroed first, so whatever fills a padded batch never
        reaches a line's frames.
        """
        frames = self.windows(images).shape[1]  # validates the shape (a view, nothing computed)
        if widths is not None:
            valid = length_mask(widths.cpu(), images.shape[-1], images.device)[:, None, None, :]  # (B, 1, 1, W)
            images = images * valid.to(images.dtype)  # (B, 1, H, W)
        if self.config.shared_cnn:
            if images.shape[3] < self.geometry.width:
                images = F.pad(images, (0, self.geometry.width - images.shape[3]))  # (B, 1, H, w)
            if widths is None:
                widths = torch.full((images.shape[0],), images.shape[-1], dtype=torch.int64)
            widths = widths.cpu().clamp(min=self.geometry.width, max=images.shape[-1])  # narrow lines pad to w
            features = self.window_cnn(images, widths)  # (B, T, D)
            assert features.shape[1] == frames, "shared CNN and window geometry disagree"
            return features
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
        x = self.features(images, widths)  # (B, 1, H, W) -> (B, T, D)
        x = self.encoder(x, lengths)  # (B, T, D)
        return self.head(self.head_dropout(x))  # (B, T, C)
