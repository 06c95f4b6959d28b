"""CRNN: sliding-window CNN features -> residual temporal-conv and BiLSTM blocks -> linear head.

Same skeleton as ``LineCNN`` (window CNN, encoder, head); what makes it a CRNN is its encoder:
after the temporal-conv blocks come ``ModelConfig.lstm_layers`` residual BiLSTM blocks, so every
frame sees the whole line.
"""

from __future__ import annotations

from torch import nn

from text_recognizer.models.blocks import conv_blocks, lstm_blocks
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.line_cnn import LineCNN


class CRNN(LineCNN):
    """``LineCNN`` whose encoder adds ``lstm_layers`` residual BiLSTM blocks after its conv blocks."""

    KIND = "crnn"

    def encoder_blocks(self, config: ModelConfig) -> dict[str, nn.Module]:
        """``conv1..``, then ``lstm1..`` (``config.block_names``), each with its drop probability."""
        probs = config.stochastic_depth_probs()  # one per block, conv blocks first
        split = config.conv_blocks
        return {**conv_blocks(config, probs[:split]), **lstm_blocks(config, probs[split:])}


def build_model(config: ModelConfig) -> nn.Module:
    """The model a config describes."""
    return CRNN(config) if config.kind == "crnn" else LineCNN(config)
