"""ChannelsLastConv2d: same numbers as nn.Conv2d, NHWC output, default-layout parameters."""

import pytest
import torch
from torch import nn

from text_recognizer.models.channels_last import ChannelsLastConv2d
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import build_model

CHANNELS_LAST = torch.channels_last


def _pair(in_channels: int, out_channels: int) -> tuple[nn.Conv2d, ChannelsLastConv2d]:
    torch.manual_seed(0)
    reference = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
    ours = ChannelsLastConv2d(in_channels, out_channels, 3, padding=1, bias=False)
    ours.load_state_dict(reference.state_dict())
    return reference, ours


@pytest.mark.parametrize("in_channels", [1, 16])  # one input channel: the stride-ambiguous case
def test_matches_conv2d_forward_and_backward_with_a_channels_last_output(in_channels):
    reference, ours = _pair(in_channels, 8)
    x = torch.randn(3, in_channels, 12, 30)
    x_ours = x.clone().requires_grad_()
    x_reference = x.clone().requires_grad_()
    y_ours, y_reference = ours(x_ours), reference(x_reference)  # (3, 8, 12, 30)
    assert y_ours.is_contiguous(memory_format=CHANNELS_LAST)
    assert not y_reference.is_contiguous(memory_format=CHANNELS_LAST)
    torch.testing.assert_close(y_ours, y_reference, atol=1e-5, rtol=1e-5)
    grad = torch.randn_like(y_reference)
    y_ours.backward(grad)
    y_reference.backward(grad)
    torch.testing.assert_close(x_ours.grad, x_reference.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.weight.grad, reference.weight.grad, atol=1e-4, rtol=1e-4)


def test_parameters_and_state_dict_keep_the_default_layout():
    _, ours = _pair(1, 8)
    ours(torch.randn(2, 1, 8, 16)).sum().backward()
    assert ours.weight.stride() == (9, 9, 3, 1)
    assert ours.weight.grad.is_contiguous()
    assert all(t.is_contiguous() for t in ours.state_dict().values())
    ours.state_dict()["weight"].view(-1)  # flat views work, as for any nn.Conv2d


def test_model_conv_stages_run_channels_last_and_its_state_dict_is_contiguous():
    model = build_model(ModelConfig(height=32)).eval()
    stages = model.window_cnn.conv
    x = torch.rand(2, 1, 32, 96)  # (B, 1, H, W)
    with torch.no_grad():
        for index in range(0, len(stages), 4):
            x = stages[index : index + 4](x)  # conv, norm, ReLU, pool
            assert x.is_contiguous(memory_format=CHANNELS_LAST), index
    assert all(t.is_contiguous() for t in model.state_dict().values())
