"""Fused CTC loss in Triton: log-softmax, alpha/beta recursions and the logits gradient.

Entry point: :func:`fused_ctc_loss` (called by ``text_recognizer.ctc.loss.ctc_loss`` with
``impl="triton"``, after all arguments were validated there). It takes *raw* logits ``(B, T, C)``;
the log-softmax is computed inside the kernels, so there is no separate autograd node and passing
log-probabilities gives the same result (log-softmax is idempotent). Semantics match
``text_recognizer.ctc.loss._torch_ctc_loss``: reductions ``none``/``sum``/``mean`` like PyTorch,
infinite losses (infeasible samples) are ``+inf`` (or ``0`` with ``zero_infinity``) and their
gradient is always zero.

Notation
--------
For one sample with label ``l = (l_0 .. l_{L-1})`` CTC works on the *extended* label
``blank, l_0, blank, l_1, ..., l_{L-1}, blank`` of ``2L + 1`` states. State ``2i`` is the ``i``-th
blank (``i = 0..L``), state ``2i + 1`` is the ``i``-th character (``i = 0..L-1``). We keep the two
kinds of states in two separate vectors indexed by ``i`` (length ``BLOCK >= L + 1``, a power of two,
masked beyond the label):

* ``alpha_blank[i]``  = log alpha_t(state 2i)
* ``alpha_label[i]``  = log alpha_t(state 2i + 1)

With that split the CTC transitions need a shift by one position of a *single* vector:

* ``alpha_blank'[i] = lse(alpha_blank[i], alpha_label[i-1])                        + lp_t(blank)``
* ``alpha_label'[i] = lse(alpha_label[i], alpha_blank[i], alpha_label[i-1] if l_i != l_{i-1}) + lp_t(l_i)``

(``lse`` = log-sum-exp with max subtraction; ``-inf`` inputs are handled so that no ``-inf - -inf``
NaN can appear). The recursion starts from a virtual ``alpha_{-1}`` that is ``log 1`` on state 0 and
``-inf`` elsewhere, which makes ``input_length == 0`` fall out naturally (loss 0 for an empty label,
``inf`` otherwise). The loss is ``-lse(alpha_{T-1}(2L), alpha_{T-1}(2L-1))``.

The shift ``x[i-1]`` is done **in registers** with ``tl.gather`` (the compiler inserts whatever
shared-memory traffic and barriers the layout needs; no hand-written memory round trip can race).
A fallback that goes through a small per-sample global scratch row with ``tl.debug_barrier()``
before the write and before the read is selectable with the environment variable
``TEXT_RECOGNIZER_CTC_SHIFT=scratch`` (default ``gather``).

Kernels
-------
1. ``_row_lse_kernel``: log-sum-exp of every ``(b, t)`` row of logits (online over class chunks),
   accumulated in float32 (float64 for float64 logits). Output ``lse`` ``(B, T)``. Massively
   parallel; everything after it reads ``lp = logit - lse`` on the fly.
2. ``_alpha_kernel``: one program per sample, a serial loop over ``t < input_length`` computing the
   alpha recursion above. The logits of the next frame are prefetched one step ahead so their load
   latency overlaps the current step. When a gradient is needed it stores every alpha row into
   ``alpha`` ``(B, T, 2 * W)`` (``W = max_label_length + 1``; the blank states in ``[0, W)``, the
   character states in ``[W, 2W)``), in the accumulation dtype. Output: per-sample NLL.
3. ``_beta_occupancy_kernel`` (backward): one program per sample, serial loop backwards over ``t``.
   ``beta_t(s)`` is the log-probability of the *future* ``t+1 .. T-1`` given state ``s`` at ``t``
   (it excludes the emission at ``t``), so ``occ_t(s) = exp(alpha_t(s) + beta_t(s) + nll)`` is the
   posterior probability that the alignment is in state ``s`` at frame ``t``. The occupancy
   overwrites ``alpha`` in place (same thread, same address: no hazard); a second backward through
   the same graph (``retain_graph=True``) re-runs kernel 2 first to rebuild alpha. Needs shifts
   ``x[i+1]`` of two vectors, again by ``tl.gather``.
4. ``_grad_kernel`` (backward): one program per ``(b, t)`` row, fully parallel. The gradient with
   respect to the raw logits is ``scale_b * (softmax_t(c) - occ_t(c))`` where ``occ_t(c)`` sums the
   state occupancies of all states whose class is ``c`` (all blank states for the blank class).
   The scatter of character states to classes is done as a dense masked reduction over
   ``(label chunk, class chunk)`` tiles in a fixed order: no atomics, bitwise deterministic.
   Rows ``t >= input_length`` and samples with infinite loss get an exact zero gradient.

``scale_b`` folds the reduction and ``grad_output``: ``grad_output[b]`` for ``none``,
``grad_output`` for ``sum``, ``grad_output / max(L_b, 1) / B`` for ``mean``.

Precision: float16/bfloat16/float32 logits accumulate in float32, float64 logits in float64 (so
``torch.autograd.gradcheck`` works). The returned loss has the accumulation dtype (like the PyTorch
path), the gradient has the dtype of the logits.

Limits: target lengths up to :data:`MAX_TARGET_LENGTH` (1023 characters, i.e. 2047 extended
states, ``BLOCK = 1024``); longer labels raise ``ValueError``. Any number of classes (the class
dimension is processed in chunks). Memory: ``lse`` ``(B, T)`` plus, only when a gradient is needed,
the ``alpha``/occupancy buffer ``(B, T, 2 * (max_L + 1))`` (same size as PyTorch's ``log_alpha``;
PyTorch also keeps ``log_beta`` and a ``(T, B, C)`` log-softmax).

Determinism: every value is produced by exactly one program in a fixed order (reductions are
Triton tree reductions of a fixed shape), so losses and gradients are bitwise identical run to run.

Running on the CPU: set ``TRITON_INTERPRET=1`` *before this module is imported* (Triton decides at
``@triton.jit`` decoration time) and pass CPU tensors.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

__all__ = ["MAX_TARGET_LENGTH", "fused_ctc_loss"]

#: Longest supported label (characters). The extended label then has 2047 states.
MAX_TARGET_LENGTH = 1023

_SHIFT_ENV = "TEXT_RECOGNIZER_CTC_SHIFT"
_WARPS_ENV = "TEXT_RECOGNIZER_CTC_SERIAL_WARPS"


# ----------------------------------------------------------------------------------------------
# Small jit helpers
# ----------------------------------------------------------------------------------------------


@triton.jit
def _lse2(a, b):
    """log(exp(a) + exp(b)) with max subtraction; -inf when both are -inf (never NaN)."""
    m = tl.maximum(a, b)
    m = tl.where(m == float("-inf"), 0.0, m)
    return m + tl.log(tl.exp(a - m) + tl.exp(b - m))


@triton.jit
def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) with max subtraction; -inf when all are -inf."""
    m = tl.maximum(tl.maximum(a, b), c)
    m = tl.where(m == float("-inf"), 0.0, m)
    return m + tl.log(tl.exp(a - m) + tl.exp(b - m) + tl.exp(c - m))


@triton.jit
def _log_prob(x, lse):
    """log-softmax entry ``x - lse``; exactly -inf for -inf logits (even if the row is all -inf)."""
    return tl.where(x == float("-inf"), float("-inf"), x - lse)


@triton.jit
def _shift(x, idx, scratch, DELTA: tl.constexpr, BLOCK: tl.constexpr, SCRATCH: tl.constexpr):
    """``y[i] = x[i + DELTA]`` (DELTA = -1 or +1), ``-inf`` where ``i + DELTA`` is outside the block.

    Register version: ``tl.gather`` along the only axis. Scratch version: write the vector to a
    per-program global row and read it back shifted; the barrier before the store protects the
    previous read of the same row (write-after-read), the one after it orders write-before-read.
    """
    src = idx + DELTA
    inside = (src >= 0) & (src < BLOCK)
    if SCRATCH:
        tl.debug_barrier()
        tl.store(scratch + idx, x)
        tl.debug_barrier()
        y = tl.load(scratch + src, mask=inside, other=float("-inf"))
    else:
        y = tl.gather(x, tl.minimum(tl.maximum(src, 0), BLOCK - 1), 0)
    return tl.where(inside, y, float("-inf"))


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------


@triton.jit
def _row_lse_kernel(
    logits_ptr, stride_b, stride_t, stride_c,
    lse_ptr,  # (B, T) contiguous, accumulation dtype
    n_rows, T, C,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """lse[b, t] = logsumexp_c logits[b, t, c], online over chunks of BLOCK_C classes."""
    acc_dtype = lse_ptr.dtype.element_ty
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < n_rows
    base = logits_ptr + (rows // T) * stride_b + (rows % T) * stride_t
    cols = tl.arange(0, BLOCK_C)
    run_max = tl.full([BLOCK_R], float("-inf"), acc_dtype)
    run_sum = tl.zeros([BLOCK_R], acc_dtype)
    for c0 in range(0, C, BLOCK_C):
        cls = c0 + cols
        mask = row_ok[:, None] & (cls < C)[None, :]
        x = tl.load(base[:, None] + cls[None, :] * stride_c, mask=mask, other=float("-inf"))
        x = x.to(acc_dtype)
        new_max = tl.maximum(run_max, tl.max(x, axis=1))
        safe = tl.where(new_max == float("-inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe) + tl.sum(tl.exp(x - safe[:, None]), axis=1)
        run_max = new_max
    safe = tl.where(run_max == float("-inf"), 0.0, run_max)
    tl.store(lse_ptr + rows, safe + tl.log(run_sum), mask=row_ok)


@triton.jit
def _alpha_kernel(
    logits_ptr, stride_lb, stride_lt, stride_lc,
    lse_ptr,  # (B, T) contiguous
    targets_ptr, target_start_ptr, target_stride,
    input_len_ptr, target_len_ptr,
    nll_ptr,  # (B,) out
    alpha_ptr, stride_ab, stride_at, width,  # (B, T, 2 * width): blank states, then labels
    scratch_ptr,  # (B, BLOCK), only used when SCRATCH
    T, blank,
    BLOCK: tl.constexpr, STORE_ALPHA: tl.constexpr, SCRATCH: tl.constexpr,
):
    """Forward: one program per sample, alpha recursion over t in registers; writes the NLL."""
    b = tl.program_id(0).to(tl.int64)
    acc_dtype = lse_ptr.dtype.element_ty
    NEG: tl.constexpr = float("-inf")
    n_t = tl.load(input_len_ptr + b)
    n_l = tl.load(target_len_ptr + b)
    idx = tl.arange(0, BLOCK)
    is_label = idx < n_l
    is_blank = idx <= n_l
    tgt = targets_ptr + tl.load(target_start_ptr + b)
    lab = tl.load(tgt + idx * target_stride, mask=is_label, other=0).to(tl.int64)
    lab_prev = tl.load(tgt + (idx - 1) * target_stride, mask=is_label & (idx > 0), other=0)
    can_skip = is_label & (idx > 0) & (lab != lab_prev.to(tl.int64))
    lab_off = lab * stride_lc
    blank_off = blank * stride_lc
    scratch = scratch_ptr + b * BLOCK

    # alpha_{-1}: log 1 on state 0 (the first blank), -inf elsewhere.
    alpha_blank = tl.where(idx == 0, 0.0, NEG).to(acc_dtype)
    alpha_label = tl.full([BLOCK], NEG, acc_dtype)

    row = logits_ptr + b * stride_lb
    lse_row = lse_ptr + b * T
    live = n_t > 0
    x_lab = tl.load(row + lab_off, mask=is_label & live, other=NEG).to(acc_dtype)
    x_blank = tl.load(row + blank_off, mask=live, other=NEG).to(acc_dtype)
    x_lse = tl.load(lse_row, mask=live, other=0.0)
    for t in range(0, n_t):
        # Prefetch frame t + 1 (independent of alpha, so the loads overlap this step's math).
        more = t + 1 < n_t
        nxt = row + (t + 1) * stride_lt
        n_lab = tl.load(nxt + lab_off, mask=is_label & more, other=NEG).to(acc_dtype)
        n_blank = tl.load(nxt + blank_off, mask=more, other=NEG).to(acc_dtype)
        n_lse = tl.load(lse_row + t + 1, mask=more, other=0.0)

        lp_lab = _log_prob(x_lab, x_lse)
        lp_blank = _log_prob(x_blank, x_lse)
        label_before = _shift(alpha_label, idx, scratch, -1, BLOCK, SCRATCH)  # alpha_label[i-1]
        new_blank = _lse2(alpha_blank, label_before) + lp_blank
        new_label = _lse3(alpha_label, alpha_blank, tl.where(can_skip, label_before, NEG)) + lp_lab
        alpha_blank = tl.where(is_blank, new_blank, NEG)
        alpha_label = tl.where(is_label, new_label, NEG)
        if STORE_ALPHA:
            dst = alpha_ptr + b * stride_ab + t * stride_at
            tl.store(dst + idx, alpha_blank, mask=is_blank)
            tl.store(dst + width + idx, alpha_label, mask=is_label)
        x_lab = n_lab
        x_blank = n_blank
        x_lse = n_lse

    last_blank = tl.max(tl.where(idx == n_l, alpha_blank, NEG), axis=0)
    last_label = tl.max(tl.where(idx == n_l - 1, alpha_label, NEG), axis=0)
    tl.store(nll_ptr + b, -_lse2(last_blank, last_label))


@triton.jit
def _beta_occupancy_kernel(
    logits_ptr, stride_lb, stride_lt, stride_lc,
    lse_ptr,
    targets_ptr, target_start_ptr, target_stride,
    input_len_ptr, target_len_ptr,
    nll_ptr,
    alpha_ptr, stride_ab, stride_at, width,  # in: alpha, out: occupancy (in place)
    scratch_ptr,
    T, blank,
    BLOCK: tl.constexpr, SCRATCH: tl.constexpr,
):
    """Backward: one program per sample, beta recursion backwards over t; alpha -> occupancy."""
    b = tl.program_id(0).to(tl.int64)
    acc_dtype = lse_ptr.dtype.element_ty
    NEG: tl.constexpr = float("-inf")
    nll = tl.load(nll_ptr + b)
    n_t = tl.load(input_len_ptr + b)
    n_t = tl.where(nll < float("inf"), n_t, 0)  # infinite loss: zero gradient, nothing to do
    n_l = tl.load(target_len_ptr + b)
    idx = tl.arange(0, BLOCK)
    is_label = idx < n_l
    is_blank = idx <= n_l
    tgt = targets_ptr + tl.load(target_start_ptr + b)
    lab = tl.load(tgt + idx * target_stride, mask=is_label, other=0).to(tl.int64)
    has_next = idx + 1 < n_l
    lab_next = tl.load(tgt + (idx + 1) * target_stride, mask=has_next, other=0).to(tl.int64)
    skip_next = has_next & (lab != lab_next)  # character i may jump to character i + 1
    lab_off = lab * stride_lc
    blank_off = blank * stride_lc
    scratch = scratch_ptr + b * BLOCK

    # beta_{T-1}: log 1 on the two final states (last blank, last character).
    beta_blank = tl.where(idx == n_l, 0.0, NEG).to(acc_dtype)
    beta_label = tl.where(idx == n_l - 1, 0.0, NEG).to(acc_dtype)

    row = logits_ptr + b * stride_lb
    lse_row = lse_ptr + b * T
    a_row = alpha_ptr + b * stride_ab
    live = n_t > 0
    t0 = n_t - 1
    x_lab = tl.load(row + t0 * stride_lt + lab_off, mask=is_label & live, other=NEG).to(acc_dtype)
    x_blank = tl.load(row + t0 * stride_lt + blank_off, mask=live, other=NEG).to(acc_dtype)
    x_lse = tl.load(lse_row + t0, mask=live, other=0.0)
    a_blank = tl.load(a_row + t0 * stride_at + idx, mask=is_blank & live, other=NEG)
    a_label = tl.load(a_row + t0 * stride_at + width + idx, mask=is_label & live, other=NEG)
    for k in range(0, n_t):
        t = n_t - 1 - k
        more = t > 0
        prv = t - 1
        p_lab = tl.load(row + prv * stride_lt + lab_off, mask=is_label & more, other=NEG).to(acc_dtype)
        p_blank = tl.load(row + prv * stride_lt + blank_off, mask=more, other=NEG).to(acc_dtype)
        p_lse = tl.load(lse_row + prv, mask=more, other=0.0)
        p_a_blank = tl.load(a_row + prv * stride_at + idx, mask=is_blank & more, other=NEG)
        p_a_label = tl.load(a_row + prv * stride_at + width + idx, mask=is_label & more, other=NEG)

        # Posterior state occupancy at t (nll is finite here).
        dst = a_row + t * stride_at
        tl.store(dst + idx, tl.exp(a_blank + beta_blank + nll), mask=is_blank)
        tl.store(dst + width + idx, tl.exp(a_label + beta_label + nll), mask=is_label)

        # beta_{t-1}(s) = lse over successors s' of beta_t(s') + lp_t(s').
        g_blank = beta_blank + _log_prob(x_blank, x_lse)
        g_label = beta_label + _log_prob(x_lab, x_lse)
        next_blank = _shift(g_blank, idx, scratch, 1, BLOCK, SCRATCH)  # g_blank[i+1]
        next_label = _shift(g_label, idx, scratch, 1, BLOCK, SCRATCH)  # g_label[i+1]
        new_blank = _lse2(g_blank, g_label)
        new_label = _lse3(g_label, next_blank, tl.where(skip_next, next_label, NEG))
        beta_blank = tl.where(is_blank, new_blank, NEG)
        beta_label = tl.where(is_label, new_label, NEG)

        x_lab = p_lab
        x_blank = p_blank
        x_lse = p_lse
        a_blank = p_a_blank
        a_label = p_a_label


@triton.jit
def _grad_kernel(
    logits_ptr, stride_lb, stride_lt, stride_lc,
    lse_ptr,
    occ_ptr, stride_ob, stride_ot, width,
    targets_ptr, target_start_ptr, target_stride,
    input_len_ptr, target_len_ptr,
    nll_ptr, scale_ptr,
    grad_ptr,  # (B, T, C) contiguous, dtype of the logits
    T, C, blank,
    BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr,
):
    """grad[b, t, c] = scale_b * (softmax - occupancy of class c); one program per (b, t) row."""
    r = tl.program_id(0).to(tl.int64)
    b = r // T
    t = r % T
    acc_dtype = lse_ptr.dtype.element_ty
    nll = tl.load(nll_ptr + b)
    n_t = tl.load(input_len_ptr + b)
    live = (t < n_t) & (nll < float("inf"))
    n_l = tl.load(target_len_ptr + b)
    n_l = tl.where(live, n_l, -1)  # -1: every loop below is empty for dead rows
    scale = tl.load(scale_ptr + b)
    lse = tl.load(lse_ptr + r)
    occ_row = occ_ptr + b * stride_ob + t * stride_ot
    tgt = targets_ptr + tl.load(target_start_ptr + b)
    pos = tl.arange(0, BLOCK_L)

    # Blank class: all blank states 0..L.
    blank_acc = tl.zeros([BLOCK_L], acc_dtype)
    for i0 in range(0, n_l + 1, BLOCK_L):
        blank_acc += tl.load(occ_row + i0 + pos, mask=i0 + pos <= n_l, other=0.0)
    blank_occ = tl.sum(blank_acc, axis=0)

    row = logits_ptr + b * stride_lb + t * stride_lt
    out = grad_ptr + r * C
    for c0 in range(0, C, BLOCK_C):
        cls = c0 + tl.arange(0, BLOCK_C)
        cls_ok = cls < C
        x = tl.load(row + cls * stride_lc, mask=cls_ok, other=float("-inf")).to(acc_dtype)
        soft = tl.where(x == float("-inf"), 0.0, tl.exp(x - lse))
        occ = tl.zeros([BLOCK_L, BLOCK_C], acc_dtype)
        for i0 in range(0, n_l, BLOCK_L):
            p = i0 + pos
            ok = p < n_l
            o = tl.load(occ_row + width + p, mask=ok, other=0.0)
            lab = tl.load(tgt + p * target_stride, mask=ok, other=-1).to(tl.int64)
            occ += tl.where(lab[:, None] == cls[None, :], o[:, None], 0.0)
        occ_c = tl.sum(occ, axis=0)
        occ_c = tl.where(cls == blank, blank_occ, occ_c)
        g = tl.where(live, scale * (soft - occ_c), 0.0)
        tl.store(out + cls, g.to(grad_ptr.dtype.element_ty), mask=cls_ok)


# ----------------------------------------------------------------------------------------------
# Host side
# ----------------------------------------------------------------------------------------------


def _use_scratch() -> bool:
    mode = os.environ.get(_SHIFT_ENV, "gather").strip().lower()
    if mode not in ("gather", "scratch"):
        raise ValueError(f"{_SHIFT_ENV} must be 'gather' or 'scratch', got {mode!r}")
    return mode == "scratch"


def _serial_num_warps(block: int) -> int:
    """Warps for the per-sample recursion kernels (overridable for benchmarking)."""
    override = os.environ.get(_WARPS_ENV)
    if override:
        return int(override)
    return max(1, min(8, block // 64))


class _Prepared:
    """Targets as (base tensor, per-sample start offset, element stride) plus block sizes."""

    def __init__(self, logits, targets, input_lengths, target_lengths):
        batch = logits.shape[0]
        device = logits.device
        if targets.dim() == 2:
            self.targets = targets
            self.start = torch.arange(batch, device=device, dtype=torch.int64) * targets.stride(0)
            self.stride = targets.stride(1)
            max_len = targets.shape[1]  # an upper bound without a device sync
            if max_len > MAX_TARGET_LENGTH and batch:
                max_len = int(target_lengths.max())
        else:
            self.targets = targets
            self.start = torch.cumsum(target_lengths, 0) - target_lengths
            self.stride = targets.stride(0) if targets.numel() else 1
            max_len = int(target_lengths.max()) if batch else 0
        if max_len > MAX_TARGET_LENGTH:
            raise ValueError(
                f"the fused Triton CTC loss supports target lengths up to MAX_TARGET_LENGTH="
                f"{MAX_TARGET_LENGTH} characters ({2 * MAX_TARGET_LENGTH + 1} extended states), "
                f"got a target of length {max_len}; use impl='torch' for longer labels"
            )
        if self.targets.numel() == 0:  # keep a valid pointer for the (fully masked) label loads
            self.targets = torch.zeros(1, dtype=targets.dtype, device=device)
        self.width = max_len + 1
        self.block = triton.next_power_of_2(max_len + 1)
        self.input_lengths = input_lengths.contiguous()
        self.target_lengths = target_lengths.contiguous()


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _row_lse(logits: torch.Tensor, acc_dtype: torch.dtype) -> torch.Tensor:
    batch, frames, classes = logits.shape
    lse = torch.empty((batch, frames), dtype=acc_dtype, device=logits.device)
    n_rows = batch * frames
    if n_rows == 0:
        return lse
    block_c = min(triton.next_power_of_2(classes), 1024)
    block_r = max(1, min(64, 4096 // block_c))
    _row_lse_kernel[(triton.cdiv(n_rows, block_r),)](
        logits, *logits.stride(), lse, n_rows, frames, classes,
        BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4,
    )
    return lse


def _scratch(prep: _Prepared, batch: int, acc_dtype, device, scratch: bool) -> torch.Tensor:
    if scratch:
        return torch.empty((batch, prep.block), dtype=acc_dtype, device=device)
    return torch.empty(1, dtype=acc_dtype, device=device)


def _forward(logits, prep: _Prepared, blank: int, store_alpha: bool, alpha=None):
    """(nll (B,), lse (B, T), alpha (B, T, 2W) or None); ``alpha``: a buffer to refill."""
    batch, frames, _ = logits.shape
    acc_dtype = _acc_dtype(logits.dtype)
    device = logits.device
    lse = _row_lse(logits, acc_dtype)
    nll = torch.empty(batch, dtype=acc_dtype, device=device)
    if alpha is not None:
        pass
    elif store_alpha:
        alpha = torch.empty((batch, frames, 2 * prep.width), dtype=acc_dtype, device=device)
    else:
        alpha = torch.empty((1, 1, 1), dtype=acc_dtype, device=device)
    if batch == 0:
        return nll, lse, (alpha if store_alpha else None)
    scratch = _use_scratch()
    _alpha_kernel[(batch,)](
        logits, *logits.stride(), lse,
        prep.targets, prep.start, prep.stride,
        prep.input_lengths, prep.target_lengths,
        nll, alpha, alpha.stride(0), alpha.stride(1), prep.width,
        _scratch(prep, batch, acc_dtype, device, scratch),
        frames, blank,
        BLOCK=prep.block, STORE_ALPHA=store_alpha, SCRATCH=scratch,
        num_warps=_serial_num_warps(prep.block),
    )
    return nll, lse, (alpha if store_alpha else None)


def _backward(logits, prep: _Prepared, blank: int, nll, lse, alpha, scale):
    """Gradient w.r.t. the raw logits; ``scale`` (B,) folds reduction and grad_output."""
    batch, frames, classes = logits.shape
    device = logits.device
    acc_dtype = lse.dtype
    grad = torch.empty((batch, frames, classes), dtype=logits.dtype, device=device)
    if batch * frames == 0:
        return grad
    scratch = _use_scratch()
    _beta_occupancy_kernel[(batch,)](
        logits, *logits.stride(), lse,
        prep.targets, prep.start, prep.stride,
        prep.input_lengths, prep.target_lengths,
        nll, alpha, alpha.stride(0), alpha.stride(1), prep.width,
        _scratch(prep, batch, acc_dtype, device, scratch),
        frames, blank,
        BLOCK=prep.block, SCRATCH=scratch,
        num_warps=_serial_num_warps(prep.block),
    )
    block_c = min(triton.next_power_of_2(classes), 128)
    block_l = min(prep.block, max(16, 4096 // block_c))  # (label chunk x class chunk) ~ 4K tile
    _grad_kernel[(batch * frames,)](
        logits, *logits.stride(), lse,
        alpha, alpha.stride(0), alpha.stride(1), prep.width,
        prep.targets, prep.start, prep.stride,
        prep.input_lengths, prep.target_lengths,
        nll, scale, grad,
        frames, classes, blank,
        BLOCK_C=block_c, BLOCK_L=block_l, num_warps=4,
    )
    return grad


def _reduce(nll, target_lengths, reduction: str, zero_infinity: bool):
    per_sample = torch.where(torch.isinf(nll), torch.zeros_like(nll), nll) if zero_infinity else nll
    if reduction == "none":
        return per_sample
    if reduction == "sum":
        return per_sample.sum()
    return (per_sample / target_lengths.clamp_min(1).to(per_sample.dtype)).mean()


class _FusedCTCLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, input_lengths, target_lengths, blank, reduction, zero_infinity,
                need_grad):
        prep = _Prepared(logits, targets, input_lengths, target_lengths)
        nll, lse, alpha = _forward(logits, prep, blank, store_alpha=need_grad)
        ctx.prep = prep
        ctx.blank = blank
        ctx.reduction = reduction
        ctx.alpha_consumed = False  # the backward overwrites alpha with the state occupancies
        if need_grad:
            ctx.save_for_backward(logits, nll, lse, alpha)
        return _reduce(nll, prep.target_lengths, reduction, zero_infinity)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_output):
        logits, nll, lse, alpha = ctx.saved_tensors
        prep = ctx.prep
        if ctx.alpha_consumed:  # a second backward (retain_graph): the buffer holds occupancies
            _forward(logits, prep, ctx.blank, store_alpha=True, alpha=alpha)
        ctx.alpha_consumed = True
        batch = logits.shape[0]
        grad_output = grad_output.to(nll.dtype)
        if ctx.reduction == "none":
            scale = grad_output.expand(batch)
        elif ctx.reduction == "sum":
            scale = grad_output.expand(batch)
        else:
            scale = grad_output / prep.target_lengths.clamp_min(1).to(nll.dtype) / max(batch, 1)
        grad = _backward(logits, prep, ctx.blank, nll, lse, alpha, scale.contiguous())
        return grad, None, None, None, None, None, None, None


def fused_ctc_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> torch.Tensor:
    """CTC loss of raw ``logits`` ``(B, T, C)`` computed by the fused Triton kernels.

    Arguments are assumed validated by ``text_recognizer.ctc.loss.ctc_loss`` (lengths are int64
    ``(B,)`` tensors on ``logits.device``, target ids in range and never ``blank``). Raises
    ``ValueError`` for labels longer than :data:`MAX_TARGET_LENGTH`.
    """
    need_grad = torch.is_grad_enabled() and logits.requires_grad
    return _FusedCTCLoss.apply(
        logits, targets, input_lengths, target_lengths, int(blank), reduction, bool(zero_infinity),
        need_grad,
    )
