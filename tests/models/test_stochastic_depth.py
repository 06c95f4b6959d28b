"""Stochastic depth: per-layer probabilities, expectation preserved, identity at eval, determinism."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.models.blocks import ConvBlock
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import build_model
from text_recognizer.models.stochastic_depth import drop_probabilities, residual

SMALL = dict(height=16, window_width=16, window_stride=4, cnn_channels=(4, 8), feature_dim=16,
             conv_blocks=2, conv_kernel=3, lstm_layers=2, lstm_hidden=8, num_classes=7, dropout=0.0)


# -- probabilities ------------------------------------------------------------------------------


def test_linear_probabilities_grow_to_the_maximum():
    assert drop_probabilities(4, 0.2, "linear", 1) == pytest.approx([0.05, 0.1, 0.15, 0.2])


def test_linear_probabilities_from_a_start_layer():
    # layers 1 and 2 are never dropped; layers 3..5 are the L = 3 droppable ones
    assert drop_probabilities(5, 0.3, "linear", 3) == pytest.approx([0.0, 0.0, 0.1, 0.2, 0.3])


def test_uniform_probabilities():
    assert drop_probabilities(4, 0.25, "uniform", 1) == [0.25] * 4
    assert drop_probabilities(4, 0.25, "uniform", 2) == [0.0, 0.25, 0.25, 0.25]


def test_off_gives_zeros_for_any_start():
    assert drop_probabilities(2, 0.0, "linear", 1) == [0.0, 0.0]
    assert drop_probabilities(0, 0.0, "uniform", 5) == []


def test_model_config_carries_the_probabilities_to_the_blocks():
    config = ModelConfig(kind="crnn", **{**SMALL, "stochastic_depth": 0.4, "stochastic_depth_start": 2})
    model = build_model(config)
    assert config.block_names == model.encoder.block_names == ["conv1", "conv2", "lstm1", "lstm2"]
    probs = [block.drop_prob for block in model.encoder.blocks.values()]
    assert probs == pytest.approx([0.0, 0.4 / 3, 0.8 / 3, 0.4]) == config.stochastic_depth_probs()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"stochastic_depth": 1.0}, r"stochastic_depth must be in \[0, 1\)"),
        ({"stochastic_depth": -0.1}, r"stochastic_depth must be in \[0, 1\)"),
        ({"stochastic_depth": 0.1, "stochastic_depth_mode": "exponential"}, "stochastic_depth_mode must be one of"),
        ({"stochastic_depth": 0.1, "stochastic_depth_start": 0}, "stochastic_depth_start must be an integer >= 1"),
        ({"stochastic_depth": 0.1, "stochastic_depth_start": 5}, r"past the last of the encoder's 4 blocks"),
        ({"stochastic_depth": 0.1, "conv_blocks": 0, "lstm_layers": 0}, "past the last of the encoder's 0 blocks"),
    ],
)
def test_invalid_settings_are_rejected_with_clear_errors(settings, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(kind="crnn", **{**SMALL, **settings})


def test_old_checkpoint_configs_without_the_new_keys_still_load():
    old = {k: v for k, v in ModelConfig(kind="crnn", **SMALL).to_dict().items() if not k.startswith("stochastic_depth")}
    config = ModelConfig.from_dict(old)
    assert config.stochastic_depth == 0.0
    assert config.stochastic_depth_mode == "linear" and config.stochastic_depth_start == 1
    roundtrip = ModelConfig(kind="crnn", **{**SMALL, "stochastic_depth": 0.3, "stochastic_depth_mode": "uniform"})
    assert ModelConfig.from_dict(roundtrip.to_dict()) == roundtrip


# -- behaviour ----------------------------------------------------------------------------------


def test_residual_keeps_the_expectation_and_drops_to_identity():
    x = torch.randn(3, 5, 4)
    g = torch.randn(3, 5, 4)
    torch.manual_seed(0)
    p = 0.3
    outputs = torch.stack([residual(x, lambda: g, p, training=True) for _ in range(4000)])  # (N, B, T, D)
    kept = ~torch.isclose(outputs, x.expand_as(outputs)).all(dim=(1, 2, 3))
    assert torch.allclose(outputs[kept], (x + g / (1 - p)).expand_as(outputs[kept]))  # kept: x + g / (1 - p)
    assert torch.allclose(outputs[~kept], x.expand_as(outputs[~kept]))  # dropped: x
    assert abs(float((~kept).float().mean()) - p) < 0.03
    assert torch.allclose(outputs.mean(0), x + g, atol=0.1)  # E[out] = x + g


def test_block_expectation_matches_eval_output():
    torch.manual_seed(1)
    block = ConvBlock(8, 3, dropout=0.0, drop_prob=0.5)
    x, lengths = torch.randn(2, 6, 8), torch.tensor([6, 4])
    block.eval()
    with torch.no_grad():
        expected = block(x, lengths)
        assert torch.equal(expected, x + block.branch(x, lengths))  # eval: every block is x + g(x)
        block.train()
        mean = torch.stack([block(x, lengths) for _ in range(3000)]).mean(0)
    assert torch.allclose(mean, expected, atol=0.05)


def test_eval_ignores_stochastic_depth_and_draws_no_random_numbers():
    torch.manual_seed(0)
    plain = build_model(ModelConfig(kind="crnn", **SMALL)).eval()
    sd_config = ModelConfig(kind="crnn", **{**SMALL, "stochastic_depth": 0.5, "stochastic_depth_mode": "uniform"})
    with_sd = build_model(sd_config).eval()
    with_sd.load_state_dict(plain.state_dict())
    images = torch.rand(2, 1, 16, 40)
    state = torch.get_rng_state()
    with torch.no_grad():
        assert torch.equal(plain(images), with_sd(images))
    assert torch.equal(state, torch.get_rng_state())


def test_one_draw_per_droppable_block_per_step():
    config = ModelConfig(kind="crnn", **{**SMALL, "stochastic_depth": 0.2, "stochastic_depth_start": 3})  # 2 droppable
    model = build_model(config).train()
    images = torch.rand(2, 1, 16, 40)
    torch.manual_seed(5)
    model(images)
    after_forward = torch.get_rng_state()
    torch.manual_seed(5)
    torch.rand(()), torch.rand(())
    assert torch.equal(after_forward, torch.get_rng_state())


def test_training_is_reproducible_under_a_seed_and_varies_across_seeds():
    config = ModelConfig(kind="crnn", **{**SMALL, "stochastic_depth": 0.5, "stochastic_depth_mode": "uniform"})
    model = build_model(config).train()
    images = torch.rand(2, 1, 16, 40)

    def outputs(seed: int) -> list[torch.Tensor]:
        torch.manual_seed(seed)
        with torch.no_grad():
            return [model(images) for _ in range(6)]

    first, again, other = outputs(3), outputs(3), outputs(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not all(torch.equal(a, b) for a, b in zip(first, other))


def test_a_dropped_block_gets_no_gradient_and_a_kept_one_does():
    block = ConvBlock(8, 3, dropout=0.0, drop_prob=0.5).train()
    x, lengths = torch.randn(2, 6, 8, requires_grad=True), torch.tensor([6, 6])
    seen = set()
    for seed in range(20):
        block.zero_grad(set_to_none=True)
        torch.manual_seed(seed)
        out = block(x, lengths)
        out.sum().backward()
        seen.add(block.conv.weight.grad is None)
    assert seen == {True, False}  # some steps dropped the block (no grad), some kept it
