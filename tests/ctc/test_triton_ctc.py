"""The fused Triton CTC loss against a float64 PyTorch reference.

Without a GPU the kernels run through Triton's interpreter on CPU tensors (``TRITON_INTERPRET=1``,
set by ``tests/ctc/conftest.py``); the interpreter is slow, so every case is tiny. With a GPU (and no
explicit ``TRITON_INTERPRET``) the same tests run the compiled kernels on CUDA.

The reference is ``ctc_loss(..., impl="torch")`` on float64 inputs (log-softmax + PyTorch's CTC,
with this project's infinite-loss semantics). Float32 accuracy is judged relative to PyTorch's own
float32 CTC on the same case: our error may be at most twice PyTorch's, plus a tiny floor.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from text_recognizer.ctc import triton_ctc
from text_recognizer.ctc.feasibility import required_frames
from text_recognizer.ctc.loss import ctc_loss

REPO = Path(__file__).resolve().parents[2]
_INTERPRETED = type(triton_ctc._recursion_kernel).__name__ == "InterpretedFunction"
if _INTERPRETED:
    DEVICE = "cpu"
elif torch.cuda.is_available():
    DEVICE = "cuda"
else:  # compiled kernels but no GPU: only the subprocess re-run below can test anything
    DEVICE = None

needs_kernels = pytest.mark.skipif(
    DEVICE is None, reason="triton_ctc was imported without TRITON_INTERPRET; see the subprocess test"
)


@pytest.mark.skipif(DEVICE is not None, reason="kernels run in this process")
def test_rerun_in_interpreter_subprocess():
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__))],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.fixture(autouse=True)
def _quiet_interpreter():
    # The interpreter evaluates log(0) = -inf with numpy, which warns; -inf is intended there.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        yield


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

FLOAT32_EPS = torch.finfo(torch.float32).eps


def make_case(seed, batch, frames, classes, blank, labels, input_lengths, scale=3.0):
    """Raw float64 logits and padded int64 targets for ``labels`` (a list of lists)."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, frames, classes, generator=gen, dtype=torch.float64) * scale
    width = max((len(label) for label in labels), default=0)
    targets = torch.full((batch, width), (blank + 1) % classes, dtype=torch.int64)
    for row, label in enumerate(labels):
        targets[row, : len(label)] = torch.tensor(label, dtype=torch.int64)
    return (
        logits,
        targets,
        torch.tensor(input_lengths, dtype=torch.int64),
        torch.tensor([len(label) for label in labels], dtype=torch.int64),
    )


def concatenate(targets, target_lengths):
    return torch.cat([targets[row, :length] for row, length in enumerate(target_lengths.tolist())])


def run(logits, targets, input_lengths, target_lengths, *, impl, device="cpu", weight=None, **kwargs):
    """(loss, grad) with the gradient of ``sum(loss * weight)`` w.r.t. the logits, on CPU."""
    x = logits.detach().to(device).requires_grad_(True)
    loss = ctc_loss(
        x, targets.to(device), input_lengths.to(device), target_lengths.to(device), impl=impl, **kwargs
    )
    if weight is None:
        weight = torch.ones_like(loss)
    (loss * weight.to(device=loss.device, dtype=loss.dtype)).sum().backward()
    return loss.detach().cpu(), x.grad.detach().cpu()


def ours(logits, targets, input_lengths, target_lengths, **kwargs):
    return run(logits, targets, input_lengths, target_lengths, impl="triton", device=DEVICE, **kwargs)


def reference(logits, targets, input_lengths, target_lengths, **kwargs):
    return run(logits.double(), targets, input_lengths, target_lengths, impl="torch", **kwargs)


def max_err(value, ref):
    value, ref = value.double(), ref.double()
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isinf(value), torch.isinf(ref)), (value, ref)
    if not finite.any():
        return 0.0
    return (value[finite] - ref[finite]).abs().max().item()


def finite_max(tensor):
    finite = tensor[torch.isfinite(tensor)]
    return finite.abs().max().item() if finite.numel() else 0.0


def assert_no_nan(*tensors):
    for tensor in tensors:
        assert not torch.isnan(tensor).any(), tensor


def assert_close_to_reference(logits, targets, input_lengths, target_lengths, *, weight=None, **kwargs):
    """Float32/float64: error bound relative to PyTorch's float32; half types: 2e-2 relative."""
    loss, grad = ours(logits, targets, input_lengths, target_lengths, weight=weight, **kwargs)
    ref_loss, ref_grad = reference(logits, targets, input_lengths, target_lengths, weight=weight, **kwargs)
    assert_no_nan(loss, grad)
    assert grad.dtype == logits.dtype and grad.shape == logits.shape
    expected_loss_dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
    assert loss.dtype == expected_loss_dtype
    loss_err, grad_err = max_err(loss, ref_loss), max_err(grad, ref_grad)
    loss_mag, grad_mag = finite_max(ref_loss), finite_max(ref_grad)
    # PyTorch's reference gradient is NaN at -inf logits; ours must be exactly 0 there.
    assert torch.all(grad[torch.isneginf(logits)] == 0)
    if logits.dtype == torch.float64:
        assert loss_err <= 1e-9 * (1 + loss_mag)
        assert grad_err <= 1e-9 * (1 + grad_mag)
    elif logits.dtype == torch.float32:
        torch_loss, torch_grad = run(logits, targets, input_lengths, target_lengths, impl="torch",
                                     weight=weight, **kwargs)
        floor_loss = 8 * FLOAT32_EPS * (1 + loss_mag)
        # The gradient is exp(log-posterior) - softmax, and a float32 log-space value of size L carries
        # ~L * eps of rounding into that exp: the floor grows with the log-likelihood's size (the loss).
        # (Found by CI: empty labels at logit scale 20 gave 1.7e-5 against a floor of 3e-6.)
        # Every log-probability is also ``x - lse`` with the row's log-sum-exp (at most the largest |logit|
        # + log C) rounded to float32 once, so each softmax and posterior carries ~|lse| * eps of relative
        # error even when the loss is ~0. (Found by CI: a 1-character label at logit scale 20 with a
        # near-zero loss gave 1.07e-6 against a floor of 9.7e-7 that left the lse out.)
        lse_mag = finite_max(logits.float()) + math.log(logits.shape[-1])
        floor_grad = 8 * FLOAT32_EPS * (1 + grad_mag) * (1 + loss_mag + lse_mag)
        assert loss_err <= 2 * max_err(torch_loss, ref_loss) + floor_loss
        assert grad_err <= 2 * max_err(torch_grad, ref_grad) + floor_grad
    else:
        assert loss_err <= 2e-2 * (1 + loss_mag)
        assert grad_err <= 2e-2 * (1 + grad_mag)
    return loss, grad


# ----------------------------------------------------------------------------------------------
# property test
# ----------------------------------------------------------------------------------------------


@st.composite
def ctc_cases(draw):
    batch = draw(st.integers(1, 3))
    frames = draw(st.integers(1, 10))  # T = 0: see test_zero_frames_and_all_empty_targets
    classes = draw(st.integers(2, 6))
    blank = draw(st.integers(0, classes - 1))
    characters = [c for c in range(classes) if c != blank]
    max_len = draw(st.integers(0, 5))
    labels = [
        draw(st.lists(st.sampled_from(characters), min_size=0, max_size=max_len)) for _ in range(batch)
    ]
    input_lengths = []
    for label in labels:
        edge = min(frames, required_frames(label))
        choice = draw(st.sampled_from(["full", "edge", "below_edge", "random"]))
        if choice == "full":
            input_lengths.append(frames)
        elif choice == "edge":
            input_lengths.append(edge)
        elif choice == "below_edge":
            input_lengths.append(max(0, edge - 1))
        else:
            input_lengths.append(draw(st.integers(0, frames)))
    return dict(
        seed=draw(st.integers(0, 2**31 - 1)),
        batch=batch, frames=frames, classes=classes, blank=blank, labels=labels,
        input_lengths=input_lengths,
        scale=draw(st.sampled_from([0.5, 3.0, 20.0])),
        dtype=draw(st.sampled_from([torch.float32, torch.float64])),
        concatenated=draw(st.booleans()),
        target_dtype=draw(st.sampled_from([torch.int32, torch.int64])),
        reduction=draw(st.sampled_from(["none", "sum", "mean"])),
        zero_infinity=draw(st.booleans()),
        weight_seed=draw(st.integers(0, 1000)),
    )


@needs_kernels
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=ctc_cases())
def test_matches_float64_reference(case):
    logits, targets, input_lengths, target_lengths = make_case(
        case["seed"], case["batch"], case["frames"], case["classes"], case["blank"], case["labels"],
        case["input_lengths"], case["scale"],
    )
    logits = logits.to(case["dtype"])
    targets = targets.to(case["target_dtype"])
    if case["concatenated"]:
        targets = concatenate(targets, target_lengths)
    gen = torch.Generator().manual_seed(case["weight_seed"])
    shape = (case["batch"],) if case["reduction"] == "none" else ()
    weight = torch.randn(shape, generator=gen, dtype=torch.float64)  # grad_output scaling
    assert_close_to_reference(
        logits, targets, input_lengths, target_lengths, weight=weight,
        blank=case["blank"], reduction=case["reduction"], zero_infinity=case["zero_infinity"],
    )


# ----------------------------------------------------------------------------------------------
# targeted cases
# ----------------------------------------------------------------------------------------------


def mixed_batch(seed=0, scale=3.0):
    """Repeats, an empty label, a sample exactly at the feasibility edge, an infeasible sample."""
    labels = [[1, 1, 2], [], [3, 2, 3, 3], [2, 2, 2]]
    input_lengths = [9, 5, 5, 4]  # needs 4, 0, 5 (edge), 5 (> 4: infeasible)
    return make_case(seed, 4, 9, 5, 0, labels, input_lengths, scale)


@needs_kernels
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_infeasible_empty_and_edge_samples(reduction, zero_infinity):
    logits, targets, input_lengths, target_lengths = mixed_batch()
    weight = torch.tensor([1.0, -2.0, 0.5, 3.0]) if reduction == "none" else torch.tensor(1.5)
    loss, grad = assert_close_to_reference(
        logits.float(), targets, input_lengths, target_lengths, weight=weight,
        reduction=reduction, zero_infinity=zero_infinity,
    )
    if reduction == "none":
        assert torch.isfinite(loss[:3]).all()
        assert loss[3].item() == (0.0 if zero_infinity else float("inf"))
    else:
        assert torch.isfinite(loss).item() == zero_infinity
    assert torch.all(grad[3] == 0)  # the infeasible sample
    assert torch.all(grad[2, 5:] == 0) and torch.all(grad[1, 5:] == 0)  # frames past input_length


@needs_kernels
def test_zero_input_length():
    logits, targets, input_lengths, target_lengths = make_case(1, 2, 4, 3, 0, [[], [1]], [0, 0])
    loss, grad = ours(logits.float(), targets, input_lengths, target_lengths, reduction="none")
    assert loss.tolist() == [0.0, float("inf")]
    assert torch.all(grad == 0)
    loss, grad = ours(logits.float(), targets, input_lengths, target_lengths, reduction="none",
                      zero_infinity=True)
    assert loss.tolist() == [0.0, 0.0] and torch.all(grad == 0)


@needs_kernels
def test_zero_frames_and_all_empty_targets():
    logits = torch.randn(2, 0, 4)
    targets = torch.zeros(2, 0, dtype=torch.int64)
    lengths = torch.zeros(2, dtype=torch.int64)
    loss, grad = ours(logits, targets, lengths, lengths, reduction="none")
    assert loss.tolist() == [0.0, 0.0] and grad.shape == (2, 0, 4)
    # empty targets with frames: loss = -sum_t log p_t(blank)
    logits, targets, input_lengths, target_lengths = make_case(2, 2, 6, 4, 2, [[], []], [6, 3])
    assert_close_to_reference(logits.float(), targets, input_lengths, target_lengths, blank=2,
                              reduction="sum")
    assert_close_to_reference(logits, concatenate(targets, target_lengths), input_lengths,
                              target_lengths, blank=2, reduction="mean")


@needs_kernels
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_extreme_logits(dtype):
    """±1e4 logits, one-hot peaked rows and -inf entries: finite where the reference is, no NaN."""
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=3)
    logits[0, :, :] = -1e4
    logits[0, torch.arange(9), torch.tensor([0, 1, 0, 1, 0, 2, 2, 0, 0])] = 1e4  # peaked on a path
    logits[1, 2] = torch.tensor([0.0, float("-inf"), float("-inf"), 5.0, float("-inf")])
    logits[2, :, 4] = float("-inf")  # a class never used by the label of sample 2
    logits[2, 1, :] = torch.tensor([1e4, -1e4, -1e4, -1e4, float("-inf")])
    logits[3, 0, :] = float("-inf")  # an all -inf row (sample 3 is infeasible anyway)
    for reduction in ("none", "mean"):
        for zero_infinity in (False, True):
            loss, grad = ours(logits.to(dtype), targets, input_lengths, target_lengths,
                              reduction=reduction, zero_infinity=zero_infinity)
            assert_no_nan(loss, grad)
    assert_close_to_reference(logits[:3].to(dtype), targets[:3], input_lengths[:3], target_lengths[:3],
                              weight=torch.tensor([1.0, 2.0, -1.0]), reduction="none")
    # a sample whose only alignment is blocked by -inf: infinite loss, zero gradient
    blocked = logits[2:3].clone()
    blocked[0, :, 3] = float("-inf")
    loss, grad = ours(blocked.to(dtype), targets[2:3], input_lengths[2:3], target_lengths[2:3],
                      reduction="none")
    assert loss.item() == float("inf") and torch.all(grad == 0)


@needs_kernels
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype):
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=4)
    for reduction in ("none", "sum", "mean"):
        weight = torch.tensor([1.0, -1.0, 0.5, 2.0]) if reduction == "none" else None
        assert_close_to_reference(logits.to(dtype), targets.int(), input_lengths, target_lengths,
                                  weight=weight, reduction=reduction)


@needs_kernels
def test_gradcheck_float64():
    logits, targets, input_lengths, target_lengths = make_case(
        5, 3, 6, 4, 1, [[2, 2], [3, 0, 3], []], [6, 5, 4], scale=1.0
    )
    device_targets = targets.to(DEVICE)
    lengths = (input_lengths.to(DEVICE), target_lengths.to(DEVICE))
    for reduction in ("none", "mean"):
        def fn(x, reduction=reduction):
            return ctc_loss(x, device_targets, *lengths, blank=1, reduction=reduction, impl="triton")

        x = logits.to(DEVICE).requires_grad_(True)
        assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=True)


@needs_kernels
def test_repeated_backward_with_retain_graph():
    """The backward only reads the saved alpha/beta buffers: a second backward gives the same."""
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=11)
    x = logits.requires_grad_(True).to(DEVICE)
    loss = ctc_loss(x, targets.to(DEVICE), input_lengths.to(DEVICE), target_lengths.to(DEVICE),
                    reduction="sum", impl="triton")
    first, = torch.autograd.grad(loss, x, retain_graph=True)
    second, = torch.autograd.grad(loss, x)
    assert torch.equal(first, second)


@needs_kernels
@pytest.mark.parametrize("concatenated", [False, True])
def test_concurrent_alpha_beta_buffers(concatenated):
    """The alpha (program (b, 0)) and beta (program (b, 1)) buffers of the forward are consistent:
    for every live frame the state occupancies exp(alpha + beta + nll) sum to 1, and alpha, beta
    and the NLL match a float64 reference recursion written in plain PyTorch."""
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=12)
    logits = logits[:3]  # feasible samples only
    targets, input_lengths, target_lengths = targets[:3], input_lengths[:3], target_lengths[:3]
    if concatenated:
        targets = concatenate(targets, target_lengths)
    x = logits.to(DEVICE).requires_grad_(True)
    prep = triton_ctc._Prepared(x, targets.to(DEVICE), input_lengths.to(DEVICE),
                                target_lengths.to(DEVICE), None)
    loss, nll, _, state = triton_ctc._forward(x.detach(), prep, 0, "none", False, need_grad=True)
    state, nll = state.cpu(), nll.cpu()
    width = prep.width
    log_probs = logits.log_softmax(-1)
    labels = mixed_batch(seed=12)[1]
    for b in range(3):
        n_t, n_l = int(input_lengths[b]), int(target_lengths[b])
        ext = [0]
        for c in labels[b, :n_l].tolist():
            ext += [c, 0]
        n_s = len(ext)
        alpha = torch.full((n_t, n_s), float("-inf"), dtype=torch.float64)
        beta = torch.full((n_t, n_s), float("-inf"), dtype=torch.float64)
        prev = torch.full((n_s,), float("-inf"), dtype=torch.float64)
        prev[0] = 0.0
        for t in range(n_t):
            for s in range(n_s):
                terms = [prev[s]] + ([prev[s - 1]] if s >= 1 else [])
                if s >= 2 and ext[s] != 0 and ext[s] != ext[s - 2]:
                    terms.append(prev[s - 2])
                alpha[t, s] = torch.logsumexp(torch.stack(terms), 0) + log_probs[b, t, ext[s]]
            prev = alpha[t]
        beta[n_t - 1, n_s - 1] = 0.0
        if n_s > 1:
            beta[n_t - 1, n_s - 2] = 0.0
        for t in range(n_t - 1, 0, -1):
            for s in range(n_s):
                succ = [s] + ([s + 1] if s + 1 < n_s else [])
                if s + 2 < n_s and ext[s + 2] != 0 and ext[s + 2] != ext[s]:
                    succ.append(s + 2)
                terms = torch.stack([beta[t, j] + log_probs[b, t, ext[j]] for j in succ])
                beta[t - 1, s] = torch.logsumexp(terms, 0)
        ref_nll = -torch.logsumexp(alpha[n_t - 1, max(0, n_s - 2):], 0)
        assert abs(nll[b].item() - ref_nll.item()) <= 1e-9 * (1 + abs(ref_nll.item()))
        got = []
        for direction, ref in ((0, alpha), (1, beta)):
            ours_state = torch.full((n_t, n_s), float("-inf"), dtype=torch.float64)
            ours_state[:, 0::2] = state[direction, b, :n_t, : n_l + 1]
            ours_state[:, 1::2] = state[direction, b, :n_t, width : width + n_l]
            assert torch.equal(torch.isinf(ours_state), torch.isinf(ref)), (direction, b)
            finite = torch.isfinite(ref)
            assert torch.allclose(ours_state[finite], ref[finite], rtol=1e-9, atol=1e-9), (direction, b)
            got.append(ours_state)
        occupancy = (got[0] + got[1] + nll[b]).exp().sum(1)
        assert torch.allclose(occupancy, torch.ones(n_t, dtype=torch.float64), atol=1e-9)


@needs_kernels
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_no_grad_path_matches_grad_path(reduction):
    """Without a gradient only the alpha programs run (no state buffer): same loss bitwise."""
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=13)
    args = (targets.to(DEVICE), input_lengths.to(DEVICE), target_lengths.to(DEVICE))
    x = logits.float().to(DEVICE)
    with torch.no_grad():
        plain = ctc_loss(x, *args, reduction=reduction, impl="triton")
    with_grad = ctc_loss(x.clone().requires_grad_(True), *args, reduction=reduction, impl="triton")
    assert with_grad.requires_grad and not plain.requires_grad
    assert torch.equal(plain, with_grad.detach())
    prep = triton_ctc._Prepared(x, *args, None)
    _, _, _, state = triton_ctc._forward(x, prep, 0, reduction, False, need_grad=False)
    assert state is None


@needs_kernels
def test_max_target_length_hint_and_expanded_grad_output():
    """A larger ``max_target_length`` (wider buffers) or none at all (concatenated targets: read
    back) gives bitwise the same; ``loss.sum().backward()`` passes an expanded (stride 0)
    grad_output for reduction='none'."""
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=14)
    x0 = logits.float().to(DEVICE)
    results = []
    for tg, hint in ((targets, None), (targets, 4), (targets, 9),
                     (concatenate(targets, target_lengths), None),
                     (concatenate(targets, target_lengths), 6)):
        x = x0.clone().requires_grad_(True)
        loss = triton_ctc.fused_ctc_loss(x, tg.to(DEVICE), input_lengths.to(DEVICE),
                                         target_lengths.to(DEVICE), reduction="none",
                                         max_target_length=hint)
        loss.sum().backward()
        results.append((loss.detach().cpu(), x.grad.cpu()))
    for loss, grad in results[1:]:
        assert torch.equal(loss, results[0][0]) and torch.equal(grad, results[0][1])
    ref_loss, ref_grad = reference(logits.float(), targets, input_lengths, target_lengths,
                                   reduction="none")
    assert max_err(results[0][0], ref_loss) < 1e-4 and max_err(results[0][1], ref_grad) < 1e-4


@needs_kernels
@pytest.mark.parametrize("frames", [1, 3, 4, 5, 8, 11])
def test_unrolled_frame_loop_tails(frames):
    """The recursion loop is unrolled by 4: every remainder of T mod 4, per-sample lengths."""
    labels = [[1], [2, 2], []]
    input_lengths = [frames, max(0, frames - 1), max(0, frames - 2)]
    logits, targets, input_lengths, target_lengths = make_case(15 + frames, 3, frames, 4, 0, labels,
                                                               input_lengths)
    weight = torch.tensor([1.0, -0.5, 2.0])
    assert_close_to_reference(logits, targets, input_lengths, target_lengths, weight=weight,
                              reduction="none")
    assert_close_to_reference(logits.float(), targets, input_lengths, target_lengths,
                              reduction="mean", zero_infinity=True)


@needs_kernels
def test_log_probs_input_is_idempotent():
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=6)
    loss_raw, grad_raw = ours(logits, targets, input_lengths, target_lengths, reduction="none")
    loss_lp, grad_lp = ours(logits.log_softmax(-1), targets, input_lengths, target_lengths,
                            reduction="none")
    assert torch.allclose(loss_raw, loss_lp, atol=1e-10, rtol=1e-10)
    assert torch.allclose(grad_raw, grad_lp, atol=1e-10)


@needs_kernels
def test_padded_and_concatenated_targets_agree_and_non_contiguous_logits():
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=7)
    logits = logits.float()
    padded = ours(logits, targets, input_lengths, target_lengths, reduction="none")
    concat = ours(logits, concatenate(targets, target_lengths).int(), input_lengths, target_lengths,
                  reduction="none")
    wide = torch.cat([targets, torch.full((4, 3), 1)], dim=1)  # extra padding columns
    padded_wide = ours(logits, wide, input_lengths, target_lengths, reduction="none")
    strided = ours(logits.transpose(0, 1).contiguous().transpose(0, 1), targets[:, :].t().contiguous().t(),
                   input_lengths, target_lengths, reduction="none")
    for other in (concat, padded_wide, strided):
        assert torch.equal(padded[0], other[0]) and torch.equal(padded[1], other[1])


@needs_kernels
def test_deterministic_bitwise():
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=8, scale=5.0)
    runs = [ours(logits.float(), targets, input_lengths, target_lengths, reduction="mean")
            for _ in range(3)]
    for loss, grad in runs[1:]:
        assert torch.equal(loss, runs[0][0]) and torch.equal(grad, runs[0][1])


@needs_kernels
def test_scratch_shift_matches_gather():
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=9)
    gathered = ours(logits.float(), targets, input_lengths, target_lengths, reduction="none")
    scratched = ours(logits.float(), targets, input_lengths, target_lengths, reduction="none",
                     kernel_config=triton_ctc.KernelConfig(shift="scratch"))
    assert torch.equal(gathered[0], scratched[0]) and torch.equal(gathered[1], scratched[1])


@needs_kernels
def test_sequential_directions_and_warps_match_default():
    """Alpha and beta in one launch (grid (B, 2)) or two, with any recursion warps: bitwise the same."""
    logits, targets, input_lengths, target_lengths = mixed_batch(seed=16)
    configs = [None, triton_ctc.KernelConfig(directions="sequential"), triton_ctc.KernelConfig(recursion_warps=1)]
    results = [ours(logits.float(), targets, input_lengths, target_lengths, reduction="sum", kernel_config=config)
               for config in configs]
    for loss, grad in results[1:]:
        assert torch.equal(loss, results[0][0]) and torch.equal(grad, results[0][1])


def test_kernel_config_defaults_and_validation():
    default = triton_ctc.DEFAULT_KERNEL_CONFIG
    assert default == triton_ctc.KernelConfig(shift="gather", recursion_warps=None, directions="concurrent")
    assert triton_ctc.kernel_configs(80, 64)["recursion"]["num_warps"] == 4  # BLOCK 128 / 32
    assert triton_ctc.kernel_configs(80, 64, triton_ctc.KernelConfig(recursion_warps=8))["recursion"]["num_warps"] == 8
    for field, bad in (("shift", "bogus"), ("directions", "auto"), ("recursion_warps", 3),
                       ("recursion_warps", True)):
        with pytest.raises(ValueError, match=f"KernelConfig.{field}"):
            triton_ctc.KernelConfig(**{field: bad})
    with pytest.raises(dataclasses.FrozenInstanceError):  # cannot change under a running loss
        default.shift = "scratch"
    logits = torch.randn(1, 3, 3)
    with pytest.raises(TypeError, match="KernelConfig"):
        triton_ctc.fused_ctc_loss(logits, torch.ones(1, 1, dtype=torch.int64), torch.tensor([3]),
                                  torch.tensor([1]), config={"shift": "scratch"})


@needs_kernels
def test_label_length_limit():
    limit = triton_ctc.MAX_TARGET_LENGTH
    assert limit >= 512
    logits = torch.randn(1, 3, 3)
    too_long = torch.ones(1, limit + 1, dtype=torch.int64)
    with pytest.raises(ValueError, match=f"MAX_TARGET_LENGTH={limit}"):
        ours(logits, too_long, torch.tensor([3]), torch.tensor([limit + 1]))
    with pytest.raises(ValueError, match=str(limit)):
        ours(logits, too_long.flatten(), torch.tensor([3]), torch.tensor([limit + 1]))
    # wide padding is fine as long as the actual labels are short
    loss, _ = ours(logits, too_long, torch.tensor([3]), torch.tensor([2]), reduction="none")
    assert torch.isfinite(loss).all()  # "1 1" needs exactly 3 frames


@needs_kernels
def test_long_label_512():
    """A 512-character label (1025 extended states) against the reference."""
    length = 512
    label = [1 + (i % 2) for i in range(length)]  # no adjacent repeats: needs exactly 512 frames
    logits, targets, input_lengths, target_lengths = make_case(10, 1, length + 2, 3, 0, [label],
                                                               [length + 2])
    assert_close_to_reference(logits, targets, input_lengths, target_lengths, reduction="sum")


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the script runs the full benchmark")
def test_benchmark_script_cpu_path(tmp_path):
    """``benchmarks/ctc_bench.py --quick`` without a GPU: interpreter correctness part only."""
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "ctc_bench.py"), "--quick", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "GPU timings need a GPU" in result.stdout
    import json

    report = json.loads(out.read_text())
    assert report["correctness"]["determinism"]["bitwise_identical"]
    for row in report["correctness"]["agreement"]:
        assert row["loss_err_ratio"] <= 2.0 + 1e-6 or row["ours_fp32_loss_err"] < 1e-5
        assert not row["ours_fp32_nan"] and not row["ours_bf16_nan"]


def test_static_analysis_script():
    """``benchmarks/ctc_static.py`` compiles the kernels for sm_90 without a GPU and reads the SASS."""
    args = [sys.executable, str(REPO / "benchmarks" / "ctc_static.py"), "--shape", "4", "16", "10", "5"]
    if (REPO / ".git").exists():
        args += ["--rev", "HEAD"]  # the committed kernels as the baseline: ratios are printed
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for kernel in ("emit", "recursion", "grad"):
        assert f"\n{kernel}: " in result.stdout
    registers = [int(line.split()[1]) for line in result.stdout.splitlines() if line.split()[:1] == ["registers"]]
    assert len(registers) == 3 and all(0 < r <= 255 for r in registers)
    per_frame = [line for line in result.stdout.splitlines() if "instructions_per_warp_per_frame" in line]
    assert per_frame and float(per_frame[0].split()[1]) > 10
    if "--rev" in args:
        assert "baseline / current" in result.stdout
