"""The encoder: a sequence of named residual blocks over the window sequence.

Blocks are numbered from 1 in order (``conv1``, ``conv2``, ..., ``lstm1``, ...). Each computes
``x + g(x)`` where ``g`` is its residual branch, which is what intermediate CTC losses (capture a
block's output) and stochastic depth (skip ``g``) need.
"""

from __future__ import annotations

import torch
from torch import nn

from text_recognizer.models.config import ModelConfig


class ConvBlock(nn.Module):
    """Residual temporal convolution: local context across neighbouring windows."""

    def __init__(self, dim: int, kernel: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.conv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2)
        self.act = nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(x).transpose(1, 2)  # (B, T, D) -> (B, D, T)
        y = self.act(self.conv(y)).transpose(1, 2)  # (B, D, T) -> (B, T, D)
        return self.dropout(y)  # (B, T, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.branch(x)  # (B, T, D)


class LSTMBlock(nn.Module):
    """Residual BiLSTM: context across the whole line, projected back to the block width."""

    def __init__(self, dim: int, hidden: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.project = nn.Linear(2 * hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(self.norm(x))  # (B, T, D) -> (B, T, 2*hidden)
        return self.dropout(self.project(y))  # (B, T, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.branch(x)  # (B, T, D)


class Encoder(nn.Module):
    """Named residual blocks applied in order; ``block_names`` lists them from first to last."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        blocks: dict[str, nn.Module] = {}
        for i in range(config.conv_blocks):
            blocks[f"conv{i + 1}"] = ConvBlock(config.feature_dim, config.conv_kernel, config.dropout)
        if config.kind == "crnn":
            for i in range(config.lstm_layers):
                blocks[f"lstm{i + 1}"] = LSTMBlock(config.feature_dim, config.lstm_hidden, config.dropout)
        self.blocks = nn.ModuleDict(blocks)
        self.norm = nn.LayerNorm(config.feature_dim)

    @property
    def block_names(self) -> list[str]:
        return list(self.blocks.keys())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks.values():
            x = block(x)  # (B, T, D)
        return self.norm(x)  # (B, T, D)
