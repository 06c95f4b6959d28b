"""CTC label smoothing: the KL term, its gradient (p - u per valid frame), scaling and errors."""

from __future__ import annotations

import math

import pytest
import torch

from text_recognizer.ctc import ctc_loss
from text_recognizer.ctc.smoothing import check_smoothing, smoothed_ctc, smoothing_term, uniform_kl


def test_uniform_posteriors_cost_nothing_and_peaked_ones_cost_more():
    lengths = torch.tensor([5, 5])
    flat = torch.zeros(2, 5, 7)
    assert torch.allclose(uniform_kl(flat, lengths), torch.zeros(2), atol=1e-6)
    peaked = flat.clone()
    peaked[:, :, 0] = 4.0
    sharper = flat.clone()
    sharper[:, :, 0] = 8.0
    assert (uniform_kl(peaked, lengths) > 0).all()
    assert (uniform_kl(sharper, lengths) > uniform_kl(peaked, lengths)).all()


def test_matches_kl_divergence_by_hand():
    torch.manual_seed(0)
    logits = torch.randn(1, 3, 5)
    p = logits.softmax(-1)[0]  # (T, C)
    by_hand = sum(float((0.2 * (torch.log(torch.tensor(0.2)) - p[t].log())).sum()) for t in range(3))
    assert float(uniform_kl(logits, torch.tensor([3]))[0]) == pytest.approx(by_hand, rel=1e-5)


def test_frames_past_the_length_are_ignored_and_get_no_gradient():
    torch.manual_seed(1)
    logits = torch.randn(2, 6, 4, requires_grad=True)
    lengths = torch.tensor([6, 3])
    uniform_kl(logits, lengths).sum().backward()
    assert torch.count_nonzero(logits.grad[1, 3:]) == 0
    changed = logits.detach().clone()
    changed[1, 3:] = 100.0  # padding: must not matter
    assert torch.allclose(uniform_kl(changed, lengths), uniform_kl(logits.detach(), lengths))


def test_gradient_is_posterior_minus_uniform():
    """The property the module relies on: d KL(u || p_t) / d logits_t = p_t - u."""
    torch.manual_seed(2)
    logits = torch.randn(1, 4, 6, dtype=torch.float64, requires_grad=True)
    uniform_kl(logits, torch.tensor([4])).sum().backward()
    expected = logits.detach().softmax(-1) - 1.0 / 6
    assert torch.allclose(logits.grad, expected, atol=1e-12)


def test_smoothed_gradient_is_label_smoothing_of_ctc_soft_targets():
    """(1 - eps) CTC + eps KL has gradient p - ((1 - eps) gamma + eps u): targets that sum to 1 per frame."""
    torch.manual_seed(3)
    logits = torch.randn(1, 8, 5, dtype=torch.float64, requires_grad=True)
    targets, frames, lengths = torch.tensor([[1, 2, 3]]), torch.tensor([8]), torch.tensor([3])
    eps = 0.1
    ctc = ctc_loss(logits, targets, frames, lengths, reduction="mean", impl="torch")
    loss = smoothed_ctc(ctc, smoothing_term(logits, frames, lengths), eps)
    (grad,) = torch.autograd.grad(loss, logits)
    soft_target = logits.detach().softmax(-1) - grad[0] * 3  # undo the 1 / target-length scaling
    assert torch.allclose(soft_target.sum(-1), torch.ones(1, 8, dtype=torch.float64), atol=1e-9)
    assert (soft_target >= eps / 5 - 1e-9).all()  # every class keeps at least eps * u


def test_term_is_scaled_by_target_length_like_ctc_mean():
    logits = torch.zeros(2, 4, 3)
    logits[:, :, 0] = 3.0
    frames = torch.tensor([4, 4])
    per_sample = uniform_kl(logits, frames)
    term = smoothing_term(logits, frames, torch.tensor([2, 0]))  # 0 is clamped to 1, as in ctc_loss
    assert float(term) == pytest.approx(float((per_sample[0] / 2 + per_sample[1] / 1) / 2))


def test_half_precision_logits_are_computed_in_float32():
    logits = torch.zeros(1, 3, 4, dtype=torch.bfloat16)
    logits[0, :, 1] = 30.0
    value = uniform_kl(logits, torch.tensor([3]))
    assert value.dtype == torch.float32 and torch.isfinite(value).all()


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, math.nan])
def test_bad_eps_is_rejected(bad):
    with pytest.raises(ValueError, match="label smoothing must be in"):
        check_smoothing(bad)


def test_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match=r"\(B, T, C\)"):
        uniform_kl(torch.zeros(3, 4), torch.tensor([4, 4, 4]))
    with pytest.raises(ValueError, match="input_lengths"):
        uniform_kl(torch.zeros(2, 3, 4), torch.tensor([3]))
