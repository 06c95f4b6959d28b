"""Tests for text_recognizer.ctc.loss (the PyTorch path and the argument validation) and feasibility.

The fused Triton kernel has its own file, ``test_triton_ctc.py``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from text_recognizer.ctc.feasibility import required_frames
from text_recognizer.ctc.loss import ctc_loss, resolve_impl

B, T, C, S = 4, 12, 6, 5


def make_batch(seed: int = 0, dtype: torch.dtype = torch.float64):
    """Random logits and padded targets (pad value deliberately not 0, to prove it is ignored)."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, T, C, generator=gen, dtype=dtype)
    targets = torch.randint(1, C, (B, S), generator=gen)
    target_lengths = torch.tensor([5, 3, 1, 0])
    for b, length in enumerate(target_lengths.tolist()):
        targets[b, length:] = C - 1  # garbage past the length
    input_lengths = torch.tensor([12, 9, 7, 4])
    return logits, targets, input_lengths, target_lengths


def reference(logits, targets, input_lengths, target_lengths, reduction, zero_infinity=False):
    log_probs = logits.double().log_softmax(-1).transpose(0, 1)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction=reduction,
                      zero_infinity=zero_infinity)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_matches_pytorch_padded(reduction: str) -> None:
    logits, targets, input_lengths, target_lengths = make_batch()
    ours = ctc_loss(logits, targets, input_lengths, target_lengths, reduction=reduction, impl="torch")
    expected = reference(logits, targets, input_lengths, target_lengths, reduction)
    assert ours.shape == expected.shape
    torch.testing.assert_close(ours, expected)


def test_mean_divides_by_target_length_clamped_to_one() -> None:
    logits, targets, input_lengths, target_lengths = make_batch()
    per_sample = ctc_loss(logits, targets, input_lengths, target_lengths, reduction="none", impl="torch")
    mean = ctc_loss(logits, targets, input_lengths, target_lengths, reduction="mean", impl="torch")
    torch.testing.assert_close(mean, (per_sample / target_lengths.clamp_min(1)).mean())


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_matches_pytorch_concatenated(reduction: str) -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=1)
    flat = torch.cat([targets[b, :n] for b, n in enumerate(target_lengths.tolist())])
    ours = ctc_loss(logits, flat, input_lengths, target_lengths, reduction=reduction, impl="torch")
    padded = ctc_loss(logits, targets, input_lengths, target_lengths, reduction=reduction, impl="torch")
    torch.testing.assert_close(ours, reference(logits, flat, input_lengths, target_lengths, reduction))
    torch.testing.assert_close(ours, padded)


def test_int32_targets_and_lengths_accepted() -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=2)
    a = ctc_loss(logits, targets.int(), input_lengths.int(), target_lengths.int(), reduction="none", impl="torch")
    b = ctc_loss(logits, targets, input_lengths, target_lengths, reduction="none", impl="torch")
    torch.testing.assert_close(a, b)


def test_list_lengths_accepted() -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=2)
    a = ctc_loss(logits, targets, input_lengths.tolist(), target_lengths.tolist(), reduction="none", impl="torch")
    b = ctc_loss(logits, targets, input_lengths, target_lengths, reduction="none", impl="torch")
    torch.testing.assert_close(a, b)


def test_log_softmax_is_part_of_the_loss() -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=3)
    raw = ctc_loss(logits, targets, input_lengths, target_lengths, reduction="none", impl="torch")
    logp = ctc_loss(logits.log_softmax(-1), targets, input_lengths, target_lengths, reduction="none", impl="torch")
    shifted = ctc_loss(logits + 7.0, targets, input_lengths, target_lengths, reduction="none", impl="torch")
    torch.testing.assert_close(raw, logp)
    torch.testing.assert_close(raw, shifted)


def test_gradient_matches_pytorch() -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=4)
    ours_in = logits.clone().requires_grad_()
    ctc_loss(ours_in, targets, input_lengths, target_lengths, reduction="mean", impl="torch").backward()
    ref_in = logits.clone().requires_grad_()
    reference(ref_in, targets, input_lengths, target_lengths, "mean").backward()
    torch.testing.assert_close(ours_in.grad, ref_in.grad)
    # frames past input_lengths get no gradient
    assert torch.all(ours_in.grad[1, 9:] == 0) and torch.all(ours_in.grad[3, 4:] == 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_low_precision_inputs_accepted(dtype: torch.dtype) -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=5, dtype=torch.float32)
    low = logits.to(dtype).requires_grad_()
    loss = ctc_loss(low, targets, input_lengths, target_lengths, reduction="none", impl="torch")
    assert loss.dtype == torch.float32
    expected = reference(low.detach().float(), targets, input_lengths, target_lengths, "none").float()
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-4)
    loss.sum().backward()
    assert low.grad is not None and low.grad.dtype == dtype and torch.isfinite(low.grad.float()).all()


def test_float64_stays_float64() -> None:
    logits, targets, input_lengths, target_lengths = make_batch(seed=5)
    assert ctc_loss(logits, targets, input_lengths, target_lengths, impl="torch").dtype == torch.float64


# ---------------------------------------------------------------------------------------------
# Infeasible samples
# ---------------------------------------------------------------------------------------------


def infeasible_batch():
    """Sample 1 cannot be aligned: label "aa" (needs 3 frames) with 2 frames; sample 2 needs 4 of 3."""
    gen = torch.Generator().manual_seed(6)
    logits = torch.randn(3, 6, 4, generator=gen, dtype=torch.float64)
    targets = torch.tensor([[1, 2, 3, 0], [1, 1, 0, 0], [1, 2, 3, 3]])
    input_lengths = torch.tensor([6, 2, 3])
    target_lengths = torch.tensor([3, 2, 4])
    return logits, targets, input_lengths, target_lengths


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_infeasible_gives_inf_and_zero_gradient(reduction: str) -> None:
    logits, targets, input_lengths, target_lengths = infeasible_batch()
    x = logits.clone().requires_grad_()
    loss = ctc_loss(x, targets, input_lengths, target_lengths, reduction=reduction, impl="torch")
    if reduction == "none":
        assert torch.isfinite(loss[0])
        assert torch.isinf(loss[1]) and loss[1] > 0
        assert torch.isinf(loss[2]) and loss[2] > 0
        loss.sum().backward()
    else:
        assert torch.isinf(loss) and loss > 0
        loss.backward()
    assert not torch.isnan(x.grad).any()
    assert torch.all(x.grad[1:] == 0)  # infeasible samples: zero gradient
    # the feasible sample keeps its true gradient
    ref = logits[:1].clone().requires_grad_()
    ref_loss = reference(ref, targets[:1], input_lengths[:1], target_lengths[:1], "none")
    scale = {"none": 1.0, "sum": 1.0, "mean": 1.0 / (3 * 3)}[reduction]
    (ref_loss.sum() * scale).backward()
    torch.testing.assert_close(x.grad[:1], ref.grad)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_zero_infinity(reduction: str) -> None:
    logits, targets, input_lengths, target_lengths = infeasible_batch()
    x = logits.clone().requires_grad_()
    loss = ctc_loss(x, targets, input_lengths, target_lengths, reduction=reduction, zero_infinity=True, impl="torch")
    expected = reference(logits, targets, input_lengths, target_lengths, reduction, zero_infinity=True)
    torch.testing.assert_close(loss.detach(), expected)
    if reduction == "none":
        assert loss[1] == 0 and loss[2] == 0
    loss.sum().backward()
    assert torch.isfinite(x.grad).all()
    assert torch.all(x.grad[1:] == 0)


def test_all_infeasible_batch() -> None:
    x = torch.randn(2, 1, 3, dtype=torch.float64, requires_grad=True)
    loss = ctc_loss(x, torch.tensor([[1, 2], [2, 2]]), torch.tensor([1, 1]), torch.tensor([2, 2]),
                    reduction="sum", impl="torch")
    assert torch.isinf(loss)
    loss.backward()
    assert torch.all(x.grad == 0)


def test_zero_loss_that_is_not_infinite_stays_zero() -> None:
    # a certain, correct prediction has loss ~0 and must not be mistaken for an infeasible one
    logits = torch.full((1, 3, 3), -1e4, dtype=torch.float64)
    logits[0, 0, 1] = logits[0, 1, 0] = logits[0, 2, 2] = 0.0
    loss = ctc_loss(logits, torch.tensor([[1, 2]]), torch.tensor([3]), torch.tensor([2]),
                    reduction="none", impl="torch")
    assert loss.item() == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    "label", [[1], [1, 2, 3], [1, 1], [1, 1, 1], [1, 2, 2, 3, 3, 3], [2, 1, 2, 1]]
)
def test_feasibility_edge(label: list[int]) -> None:
    needed = required_frames(label)
    logits = torch.randn(1, needed + 2, 4, dtype=torch.float64)
    targets = torch.tensor([label])
    lengths = torch.tensor([len(label)])
    at_edge = ctc_loss(logits, targets, torch.tensor([needed]), lengths, reduction="none", impl="torch")
    below = ctc_loss(logits, targets, torch.tensor([needed - 1]), lengths, reduction="none", impl="torch")
    assert torch.isfinite(at_edge).all()
    assert torch.isinf(below).all()


def test_empty_target() -> None:
    logits = torch.randn(1, 4, 3, dtype=torch.float64)
    loss = ctc_loss(logits, torch.zeros(1, 2, dtype=torch.long), torch.tensor([4]), torch.tensor([0]),
                    reduction="none", impl="torch")
    torch.testing.assert_close(loss, -logits.log_softmax(-1)[0, :, 0].sum().reshape(1))


# ---------------------------------------------------------------------------------------------
# required_frames
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "frames"),
    [([], 0), ("", 0), ("a", 1), ("ab", 2), ("aa", 3), ("aaa", 5), ("abba", 5), ("hello", 6),
     ("bookkeeper", 13), ([1, 2, 1], 3), ([3, 3], 3)],
)
def test_required_frames(label, frames: int) -> None:
    assert required_frames(label) == frames


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def valid_args():
    logits = torch.randn(2, 5, 4)
    targets = torch.tensor([[1, 2], [3, 0]])
    return logits, targets, torch.tensor([5, 4]), torch.tensor([2, 1])


def call(**overrides):
    logits, targets, input_lengths, target_lengths = valid_args()
    kwargs = dict(logits=logits, targets=targets, input_lengths=input_lengths, target_lengths=target_lengths)
    kwargs.update(overrides)
    options = {k: kwargs.pop(k) for k in ("reduction", "impl", "blank", "zero_infinity") if k in kwargs}
    return ctc_loss(kwargs["logits"], kwargs["targets"], kwargs["input_lengths"], kwargs["target_lengths"],
                    **options)


def test_valid_args_pass() -> None:
    assert torch.isfinite(call(impl="torch"))


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"logits": torch.randn(5, 4)}, "logits must be a"),
        ({"logits": torch.randn(2, 5, 4, 1)}, "logits must be a"),
        ({"logits": [[[0.0]]]}, "logits must be a"),
        ({"logits": torch.zeros(2, 5, 4, dtype=torch.int64)}, "logits must be float16"),
        ({"logits": torch.zeros(2, 5, 1)}, "at least 2 classes"),
        ({"targets": torch.tensor([[1.0, 2.0], [3.0, 0.0]])}, "targets must be an int32/int64"),
        ({"targets": [[1, 2], [3, 0]]}, "targets must be an int32/int64"),
        ({"targets": torch.tensor([[1, 2], [3, 0]], dtype=torch.int16)}, "targets must be an int32/int64"),
        ({"targets": torch.ones(2, 2, 1, dtype=torch.long)}, "targets must be padded"),
        ({"targets": torch.ones(3, 2, dtype=torch.long)}, "targets has batch size 3"),
        ({"input_lengths": torch.tensor([5, 4, 3])}, "input_lengths has 3 entries"),
        ({"target_lengths": torch.tensor([2])}, "target_lengths has 1 entries"),
        ({"input_lengths": torch.tensor([5.0, 4.0])}, "input_lengths must be a 1-D int"),
        ({"input_lengths": torch.tensor([[5, 4]])}, "input_lengths must be a 1-D int"),
        ({"target_lengths": torch.tensor(2)}, "target_lengths must be a 1-D int"),
        ({"input_lengths": "five"}, "input_lengths must be a 1-D int"),
        ({"input_lengths": torch.tensor([6, 4])}, r"input_lengths must be in \[0, T=5\]"),
        ({"input_lengths": torch.tensor([5, -1])}, r"input_lengths must be in \[0, T=5\]"),
        ({"target_lengths": torch.tensor([3, 1])}, "target_lengths must be <= S=2"),
        ({"target_lengths": torch.tensor([2, -1])}, "target_lengths must be >= 0"),
        ({"targets": torch.tensor([1, 2, 3, 1])}, "concatenated targets have 4 ids but target_lengths sum to 3"),
        ({"targets": torch.tensor([[1, 4], [3, 0]])}, r"target ids must be in \[0, C=4\)"),
        ({"targets": torch.tensor([[1, -2], [3, 0]])}, r"target ids must be in \[0, C=4\)"),
        ({"targets": torch.tensor([[1, 0], [3, 0]])}, "blank id 0"),
        ({"targets": torch.tensor([1, 0, 3])}, "blank id 0"),
        ({"blank": 4}, r"blank must be in \[0, C=4\)"),
        ({"blank": -1}, r"blank must be in \[0, C=4\)"),
        ({"reduction": "avg"}, "reduction must be one of"),
        ({"impl": "cuda"}, "impl must be one of"),
    ],
)
def test_validation_errors(overrides: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call(**overrides)


def test_ids_past_target_length_are_not_validated() -> None:
    # the padding of padded targets may hold anything, even out-of-range ids or the blank
    targets = torch.tensor([[1, 2], [3, 99]])
    assert torch.isfinite(call(targets=targets, impl="torch"))


def test_other_blank_id() -> None:
    logits, _, input_lengths, target_lengths = valid_args()
    targets = torch.tensor([[0, 1], [2, 3]])
    ours = ctc_loss(logits, targets, input_lengths, target_lengths, blank=3, reduction="none", impl="torch")
    expected = F.ctc_loss(logits.double().log_softmax(-1).transpose(0, 1), targets, input_lengths,
                          target_lengths, blank=3, reduction="none").float()
    torch.testing.assert_close(ours, expected)
    with pytest.raises(ValueError, match="blank id 3"):
        ctc_loss(logits, torch.tensor([[3, 1], [2, 0]]), input_lengths, target_lengths, blank=3, impl="torch")


def test_resolve_impl() -> None:
    assert resolve_impl("auto", torch.device("cpu")) == "torch"
    assert resolve_impl("torch", torch.device("cpu")) == "torch"
    with pytest.raises(ValueError, match="impl must be one of"):
        resolve_impl("fast", torch.device("cpu"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="device mismatch needs a CUDA device")
def test_device_mismatch() -> None:
    logits, targets, input_lengths, target_lengths = valid_args()
    with pytest.raises(ValueError, match="targets are on"):
        ctc_loss(logits.cuda(), targets, input_lengths, target_lengths)
