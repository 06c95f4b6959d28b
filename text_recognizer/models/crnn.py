"""CRNN: sliding-window CNN features -> residual BiLSTM blocks -> linear head.

Same skeleton as ``LineCNN``; the encoder gets BiLSTM blocks (``ModelConfig.lstm_layers``) so
every frame sees the whole line.
"""

from __future__ import annotations

from torch import nn

from text_recognizer.models.config import ModelConfig
from text_recognizer.models.line_cnn import LineCNN


class CRNN(LineCNN):
    """``LineCNN`` whose encoder also holds ``lstm_layers`` residual BiLSTM blocks."""

    def __init__(self, config: ModelConfig):
        if config.kind != "crnn":
            raise ValueError(f"CRNN needs kind='crnn', got {config.kind!r}")
        super().__init__(config)


def build_model(config: ModelConfig) -> nn.Module:
    """The model a config describes."""
    return CRNN(config) if config.kind == "crnn" else LineCNN(config)
