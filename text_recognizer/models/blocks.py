"""The encoder: a sequence of named residual blocks over the window sequence.

Blocks are numbered from 1 in order (``conv1``, ``conv2``, ..., ``lstm1``, ...). Each computes
``x + g(x)`` where ``g`` is its residual branch, which is what intermediate CTC losses (capture a
block's output: ``text_recognizer.ctc.interctc``) and stochastic depth (skip ``g`` in training:
``text_recognizer.models.stochastic_depth``) need.

Padding: in a batch, lines shorter than the widest are padded. Every block takes the valid frame
counts ``lengths`` (``(B,)``) and never lets padded frames reach valid ones (conv inputs are
zeroed past each length, the BiLSTM runs on packed sequences), so a line decodes the same alone
or in any batch.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from text_recognizer.models.config import ModelConfig
from text_recognizer.models.stochastic_depth import residual


class ConvBlock(nn.Module):
    """Residual temporal convolution: local context across neighbouring windows."""

    def __init__(self, dim: int, kernel: int, dropout: float, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = drop_prob  # stochastic depth (a fixed hyper-parameter, not state)
        self.norm = nn.LayerNorm(dim)
        self.conv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2)
        self.act = nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def branch(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        y = self.norm(x) * frame_mask(lengths, x.shape[1], x.device)  # (B, T, D), zero past each length
        y = self.act(self.conv(y.transpose(1, 2))).transpose(1, 2)  # (B, D, T) -> (B, T, D)
        return self.dropout(y)  # (B, T, D)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return residual(x, lambda: self.branch(x, lengths), self.drop_prob, self.training)  # (B, T, D)


class LSTMBlock(nn.Module):
    """Residual BiLSTM: context across the whole line, projected back to the block width."""

    def __init__(self, dim: int, hidden: int, dropout: float, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = drop_prob  # stochastic depth (a fixed hyper-parameter, not state)
        self.norm = nn.LayerNorm(dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.project = nn.Linear(2 * hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def branch(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(self.norm(x), lengths.cpu(), batch_first=True, enforce_sorted=False)
        y, _ = self.lstm(packed)
        y, _ = pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])  # (B, T, 2*hidden), 0 past lengths
        return self.dropout(self.project(y))  # (B, T, D)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return residual(x, lambda: self.branch(x, lengths), self.drop_prob, self.training)  # (B, T, D)


class Encoder(nn.Module):
    """Named residual blocks applied in order; ``block_names`` lists them from first to last."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        blocks: dict[str, nn.Module] = {}
        probs = iter(config.stochastic_depth_probs())  # one per block, in order
        for i in range(config.conv_blocks):
            blocks[f"conv{i + 1}"] = ConvBlock(config.feature_dim, config.conv_kernel, config.dropout, next(probs))
        if config.kind == "crnn":
            for i in range(config.lstm_layers):
                blocks[f"lstm{i + 1}"] = LSTMBlock(config.feature_dim, config.lstm_hidden, config.dropout, next(probs))
        self.blocks = nn.ModuleDict(blocks)
        self.norm = nn.LayerNorm(config.feature_dim)

    @property
    def block_names(self) -> list[str]:
        return list(self.blocks.keys())

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        for block in self.blocks.values():
            x = block(x, lengths)  # (B, T, D)
        return self.norm(x)  # (B, T, D)


def frame_mask(lengths: torch.Tensor, frames: int, device: torch.device) -> torch.Tensor:
    """``(B, T, 1)`` float mask: 1 for valid frames, 0 for padding."""
    steps = torch.arange(frames, device=device)
    return (steps[None, :] < lengths.to(device)[:, None]).unsqueeze(-1).float()  # (B, T, 1)
