"""InterCTC: exact loss composition, capture only inside ``capture()``, gradients, config errors."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import build_model

SMALL = dict(kind="crnn", height=16, window_width=16, window_stride=4, cnn_channels=(4, 8), feature_dim=16,
             conv_blocks=1, conv_kernel=3, lstm_layers=2, lstm_hidden=8, num_classes=7, dropout=0.0)


class AddBlock(nn.Module):
    """A residual block whose branch is a constant: output = x + delta."""

    def __init__(self, delta):
        super().__init__()
        self.delta = nn.Parameter(torch.tensor(delta))

    def forward(self, x, lengths):
        return x + self.delta  # (B, T, D)


class HandModel(nn.Module):
    """The model interface InterCTC uses, with an identity norm and head: logits = block outputs."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Module()
        self.encoder.blocks = nn.ModuleDict(
            {"a": AddBlock([0.0, 1.0]), "b": AddBlock([1.0, 0.0]), "c": AddBlock([0.0, 2.0])})
        self.encoder.norm = nn.Identity()
        self.head_dropout = nn.Identity()
        self.head = nn.Linear(2, 2, bias=False)
        with torch.no_grad():
            self.head.weight.copy_(torch.eye(2))

    def forward(self, x):
        for block in self.encoder.blocks.values():
            x = block(x, None)
        return self.head(self.head_dropout(self.encoder.norm(x)))  # (B, T, C)


def single_label_nll(logits: torch.Tensor) -> float:
    """-log P(label [1]) for 2 frames, 2 classes (blank 0): P = 1 - q1 * q2, q = blank probability."""
    q = torch.softmax(logits, dim=-1)[:, 0]  # (T,)
    return -math.log(1.0 - float(q[0] * q[1]))


def test_combine_is_the_weighted_sum():
    interctc = InterCTC([1, 3], [0.2, 0.1])
    total = interctc.combine(torch.tensor(2.0), {1: torch.tensor(4.0), 3: torch.tensor(1.0)})
    assert float(total) == pytest.approx(0.7 * 2.0 + 0.2 * 4.0 + 0.1 * 1.0)


@torch.no_grad()
def test_exact_composition_on_a_hand_made_model():
    model = HandModel()
    x = torch.tensor([[[0.0, 0.0], [1.0, -1.0]]])  # (B=1, T=2, D=2)
    targets, frames, lengths = torch.tensor([[1]]), torch.tensor([2]), torch.tensor([1])
    interctc = InterCTC([1, 2], [0.25, 0.125])
    with interctc.capture(model) as captured:
        logits = model(x)
    # hand-computed block outputs: after a: x + [0, 1]; after b: + [1, 0]; after c (final): + [0, 2]
    after_a = x + torch.tensor([0.0, 1.0])
    after_b = after_a + torch.tensor([1.0, 0.0])
    assert torch.equal(captured[1], after_a) and torch.equal(captured[2], after_b)
    assert torch.equal(logits, after_b + torch.tensor([0.0, 2.0]))
    from text_recognizer.ctc.loss import ctc_loss

    final = ctc_loss(logits, targets, frames, lengths, impl="torch")
    losses = interctc.layer_losses(model, captured, targets, frames, lengths, impl="torch")
    expected = {1: single_label_nll(after_a[0]), 2: single_label_nll(after_b[0])}
    assert float(final) == pytest.approx(single_label_nll(logits[0]), rel=1e-5)
    for layer in (1, 2):
        assert float(losses[layer]) == pytest.approx(expected[layer], rel=1e-5)
    total = interctc.combine(final, losses)
    assert float(total) == pytest.approx(
        (1 - 0.375) * single_label_nll(logits[0]) + 0.25 * expected[1] + 0.125 * expected[2], rel=1e-5
    )


def _module_state(model: nn.Module) -> dict:
    return {name: (set(vars(m)), len(m._forward_hooks), len(m._forward_pre_hooks)) for name, m in model.named_modules()}


def test_capture_leaves_nothing_behind_and_eval_captures_nothing():
    model = build_model(ModelConfig(**SMALL))
    images = torch.rand(2, 1, 16, 40)
    before = _module_state(model)
    interctc = InterCTC([1, 2], [0.2, 0.2])
    with interctc.capture(model) as captured:
        assert all(len(model.encoder.blocks[n]._forward_hooks) == 1 for n in ("conv1", "lstm1"))
        model(images)
    assert set(captured) == {1, 2} and captured[1].shape == (2, 7, 16)
    assert _module_state(model) == before  # hooks removed, no attribute added to any module
    model.eval()
    with torch.no_grad():
        model(images)  # plain inference: no hook runs, nothing kept
    assert _module_state(model) == before
    # hooks are removed even when the step fails
    with pytest.raises(RuntimeError, match="boom"):
        with interctc.capture(model):
            raise RuntimeError("boom")
    assert _module_state(model) == before


def test_gradients_reach_the_captured_layers():
    torch.manual_seed(0)
    model = build_model(ModelConfig(**SMALL)).train()
    images = torch.rand(2, 1, 16, 40)
    targets, lengths = torch.tensor([[1, 2], [3, 0]]), torch.tensor([2, 1])
    interctc = InterCTC([1], [0.3])  # conv1
    with interctc.capture(model) as captured:
        model(images)
    frames = model.output_lengths(torch.tensor([40, 40]))
    layer_loss = interctc.layer_losses(model, captured, targets, frames, lengths, impl="torch")[1]
    layer_loss.backward()
    assert model.encoder.blocks["conv1"].conv.weight.grad.abs().sum() > 0
    assert model.head.weight.grad.abs().sum() > 0  # the shared head learns from it too
    assert model.window_cnn.project.weight.grad.abs().sum() > 0
    assert model.encoder.blocks["lstm2"].forward_lstm.weight_ih_l0.grad is None  # above the captured layer: untouched


def test_a_captured_output_of_another_width_is_an_error():
    model = build_model(ModelConfig(**SMALL))
    with pytest.raises(ValueError, match="projection"):
        InterCTC.head_logits(model, torch.zeros(1, 3, 5))


def test_layer_names_and_metric_names():
    model = build_model(ModelConfig(**SMALL))
    interctc = InterCTC([3, 1], [0.1, 0.2])
    assert interctc.block_names(model) == {3: "lstm2", 1: "conv1"}
    assert interctc.metric_names(model) == {3: "interctc_lstm2", 1: "interctc_conv1"}


@pytest.mark.parametrize(
    ("layers", "weights", "message"),
    [
        ([1, 2], [0.3], "one weight per layer; got 2 layers"),
        ([], [0.3], "one weight per layer"),
        ([], [], "no layers given"),
        ([1], [0.0], r"weights must each be in \(0, 1\)"),
        ([1], [1.0], r"weights must each be in \(0, 1\)"),
        ([1], [-0.2], r"weights must each be in \(0, 1\)"),
        ([1, 2], [0.6, 0.4], "sum to less than 1"),
        ([0], [0.2], "block numbers >= 1"),
        ([1.5], [0.2], "block numbers >= 1"),
        ([2, 2], [0.1, 0.1], "distinct"),
    ],
)
def test_invalid_settings(layers, weights, message):
    with pytest.raises(ValueError, match=message):
        InterCTC(layers, weights)


def test_layers_must_exist_in_the_model():
    model = build_model(ModelConfig(**SMALL))  # 3 blocks: conv1 lstm1 lstm2
    message = r"layers \[4\] do not exist: the encoder has 3 blocks, numbered 1..3 \(1=conv1, 2=lstm1, 3=lstm2\)"
    with pytest.raises(ValueError, match=message):
        with InterCTC([2, 4], [0.1, 0.1]).capture(model):
            pass
    assert all(len(m._forward_hooks) == 0 for m in model.modules())


def test_off_when_nothing_is_given():
    assert InterCTC.from_settings((), ()) is None
    assert InterCTC.from_settings((2,), (0.3,)).layers == (2,)
