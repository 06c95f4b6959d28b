"""LineUNet: the maps' shape, and the input sizes it needs."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.segmentation.unet import CHANNELS, LineUNet, UNetConfig


def test_maps_are_half_the_input_size():
    model = LineUNet(UNetConfig((4, 8, 8))).eval()
    assert model.stride == 8
    with torch.no_grad():
        maps = model(torch.zeros(2, 1, 64, 96))
    assert maps.shape == (2, len(CHANNELS), 32, 48)


def test_config_round_trip_and_bad_widths():
    config = UNetConfig((4, 8, 16))
    assert UNetConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="widths"):
        LineUNet(UNetConfig((4,)))
