"""Tests for text_recognizer/models/growth.py: a deeper model that starts as the shallower one."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.models import build_model
from text_recognizer.models.blocks import ConvBlock, LSTMBlock
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.growth import growth, new_block_names, zero_residual_branch

SMALL = dict(height=32, cnn_channels=(8, 16), feature_dim=32, lstm_hidden=16, conv_blocks=1, lstm_layers=1,
             dropout=0.0, num_classes=12)


def test_growth_lists_the_block_counts_that_grow_and_refuses_to_shrink():
    small, deep = ModelConfig(**SMALL), ModelConfig(**{**SMALL, "conv_blocks": 2, "lstm_layers": 3})
    assert growth(small, small) == {}
    assert growth(small, deep) == {"conv_blocks": (1, 2), "lstm_layers": (1, 3)}
    assert new_block_names(small, deep) == ["conv2", "lstm2", "lstm3"]
    with pytest.raises(ValueError, match="grow from a checkpoint, not shrink"):
        growth(deep, small)


@pytest.mark.parametrize("block", [ConvBlock(32, 5, 0.0), LSTMBlock(32, 16, 0.0)])
def test_a_zeroed_branch_is_the_identity_but_still_learns(block):
    torch.manual_seed(0)
    zero_residual_branch(block)
    x = torch.randn(2, 7, 32)  # (B, T, D)
    lengths = torch.tensor([7, 4])
    y = block(x, lengths)
    assert torch.equal(y, x)
    y.pow(2).sum().backward()
    last = block.project if isinstance(block, LSTMBlock) else block.conv
    assert last.weight.grad.abs().sum() > 0  # the zeroed layer has a gradient: the block grows into use


def test_zero_residual_branch_rejects_other_modules():
    with pytest.raises(TypeError, match="no residual branch"):
        zero_residual_branch(torch.nn.Linear(3, 3))


def test_untrained_blocks_change_the_output_until_zeroed():
    """The identity comes from the zeroing, not from the block being inert anyway (the test can fail)."""
    torch.manual_seed(1)
    small = build_model(ModelConfig(**SMALL)).eval()
    deep = build_model(ModelConfig(**{**SMALL, "lstm_layers": 2})).eval()
    state = deep.state_dict()
    state.update(small.state_dict())
    deep.load_state_dict(state)
    images = torch.rand(1, 1, 32, 60)
    with torch.inference_mode():
        assert not torch.allclose(deep(images), small(images))
        zero_residual_branch(deep.encoder.blocks["lstm2"])
        assert torch.allclose(deep(images), small(images), atol=1e-6)
