"""Fused CTC loss in Triton: log-softmax, concurrent alpha/beta recursions and the logits gradient.

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

``beta_t(s)`` is the log-probability of the *future* frames ``t+1 .. T-1`` given state ``s`` at
``t`` (it excludes the emission at ``t``): ``beta_{T-1}`` is ``log 1`` on the two final states and
``beta_{t-1}(s) = lse over successors s' of (beta_t(s') + lp_t(s'))``. Then
``occ_t(s) = exp(alpha_t(s) + beta_t(s) + nll)`` is the posterior probability that the alignment is
in state ``s`` at frame ``t``.

Beta runs on the same two vectors, except that the character vector is offset by one:
``beta_char[i]`` = log beta_t(state ``2i - 1``), i.e. character ``i - 1`` (entry 0 unused). With
``g = beta + lp_t`` the successors of blank ``i`` are blank ``i`` and character ``i``, those of
character ``i - 1`` are itself, blank ``i`` and (if the labels differ) character ``i``: every
update needs the same shifted vector ``g_char[i + 1]``, so beta, like alpha, does **one** shift
per frame (with both vectors indexed alike it needed two: ``g_blank[i + 1]`` and
``g_label[i + 1]``).

The shift ``x[i-1]`` / ``x[i+1]`` is done **in registers** with ``tl.gather`` (the compiler inserts
whatever shared-memory traffic and barriers the layout needs; no hand-written memory round trip can
race). The launch choices that do not change any result (the shift implementation, the recursion
kernel's warps, concurrent or sequential alpha/beta launches) are a frozen :class:`KernelConfig`
passed to :func:`fused_ctc_loss`; its defaults are the shipped choice.

Kernels and buffers
-------------------
``W = max_label_length + 1`` (from the host: ``max(target_lengths)`` as read by the validation in
``ctc_loss``, or the padded width ``S``; no device synchronisation).

1. ``_emit_kernel`` (grid ``(B, ceil(T / BLOCK_T))``, fully parallel): for each frame
   ``t < input_length`` the row log-sum-exp ``lse[b, t]`` (online over class chunks, accumulated in
   float32, float64 for float64 logits) and the compact *emission* buffer
   ``emit[b, t, :] = [lp_t(blank), lp_t(l_0), ..., lp_t(l_{L-1})]`` ``(B, T, W)`` (``lp = logit - lse``).
   Frames past the input length are skipped.
2. ``_recursion_kernel`` (grid ``(B, 2)`` when a gradient is needed, ``(B, 1)`` otherwise): program
   ``(b, 0)`` runs the alpha recursion forward in time, program ``(b, 1)`` the beta recursion
   backward in time, **concurrently** (the serial chain of forward + backward is one ``T`` long,
   not two). ``KernelConfig.directions`` selects one launch of grid ``(B, 2)`` (``concurrent``,
   the default) or two launches of grid ``(B, 1)`` (``sequential``: alpha, then beta; same code,
   same results bitwise). Each step loads one small contiguous emission vector (plus the blank
   scalar); the loop is unrolled by 4 and the next 4 frames' emissions are loaded one chunk ahead,
   so their latency overlaps the arithmetic. With a gradient they store ``state[0] = alpha`` and
   ``state[1] = beta``, ``state`` ``(2, B, T, 2W)`` (per frame the blank states in ``[0, W)``, the
   character states in ``[W, 2W)``). The two programs only read ``emit`` and the targets and write
   disjoint halves of ``state``: they never exchange data. The alpha program writes the NLL
   ``nll (B,)`` and the per-sample loss ``out (B,)`` (``zero_infinity`` applied).
3. ``_reduce_kernel`` (one program, ``sum``/``mean`` only): the reduction of ``out`` in a fixed order.
4. ``_grad_kernel`` (backward; one program per ``(b, t)`` row, fully parallel): the gradient with
   respect to the raw logits is ``scale_b * (softmax_t(c) - occ_t(c))`` where ``occ_t(c)`` sums the
   state occupancies of all states whose class is ``c`` (all blank states for the blank class).
   A program loads the frame's alpha, beta and labels whole (independent loads: one memory
   latency), then walks the classes in chunks; the scatter of character states to a chunk of
   classes is a dense masked reduction of a ``(character states x class chunk)`` tile of ~1024
   entries, in a fixed order: no atomics, bitwise deterministic.
   Rows ``t >= input_length`` and samples with infinite loss get an exact zero gradient.
   ``scale_b`` folds the reduction and ``grad_output`` in the kernel: ``grad_output[b]`` for
   ``none``, ``grad_output`` for ``sum``, ``grad_output / max(L_b, 1) / B`` for ``mean``.

The backward runs no serial recursion at all; it does not modify ``state``, so a second backward
through the same graph (``retain_graph=True``) just runs ``_grad_kernel`` again.

Tile sizes and warps were chosen from the kernels compiled for sm_90 without a GPU (registers per
thread, hence programs per multiprocessor, and instructions per program from the SASS; see
``benchmarks/RESULTS.md``); their GPU timings are what ``benchmarks/ctc_bench.py`` measures. Concatenated
targets need per-sample start offsets: every program computes its exclusive prefix sum of
``target_lengths`` itself (no ``cumsum`` launch). Forward + backward is 3 kernel launches (+1 with
``sum``/``mean``, +1 in sequential mode) and no host synchronisation.

Precision: float16/bfloat16/float32 logits accumulate in float32, float64 logits in float64 (so
``torch.autograd.gradcheck`` works). The returned loss has the accumulation dtype (like the PyTorch
path), the gradient has the dtype of the logits.

Limits: target lengths up to :data:`MAX_TARGET_LENGTH` (1023 characters, i.e. 2047 extended
states, ``BLOCK = 1024``); longer labels raise ``ValueError``. Any number of classes (the class
dimension is processed in chunks). Memory (accumulation dtype): ``lse`` ``(B, T)`` and ``emit``
``(B, T, W)`` (freed after the forward), plus, only when a gradient is needed, ``state``
``(B, T, 4W)``, i.e. PyTorch's ``log_alpha`` + ``log_beta``; PyTorch additionally keeps a
``(T, B, C)`` log-softmax and its gradient.

Determinism: every value is produced by exactly one program in a fixed order (reductions are
Triton tree reductions of a fixed shape), so losses and gradients are bitwise identical run to run.

Running on the CPU: set ``TRITON_INTERPRET=1`` *before this module is imported* (Triton decides at
``@triton.jit`` decoration time) and pass CPU tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

__all__ = ["DEFAULT_KERNEL_CONFIG", "KernelConfig", "MAX_TARGET_LENGTH", "fused_ctc_loss", "kernel_configs"]

#: Longest supported label (characters). The extended label then has 2047 states.
MAX_TARGET_LENGTH = 1023

#: Entries of the gradient kernel's (character states x class chunk) tile.
_GRAD_TILE = 1024

_SHIFTS = ("gather", "scratch")
_DIRECTIONS = ("concurrent", "sequential")


@dataclass(frozen=True)
class KernelConfig:
    """Launch choices of the fused kernels that change speed only, never a result (bitwise).

    The defaults are the shipped choice and live only here. The alternatives stay because they are
    cheap (one compile-time branch, one launch-grid choice, one number) and because they are what
    ``benchmarks/ctc_bench.py`` sweeps to re-tune on another GPU or Triton version: on the H200 the
    sweep's best setting was within run-to-run noise (~0.1 ms) of the defaults (0.475 vs 0.48 ms,
    ``benchmarks/RESULTS.md``), so no alternative earned becoming the default.

    Attributes:
        shift: ``"gather"`` shifts the state vectors in registers with ``tl.gather``;
            ``"scratch"`` goes through a per-program global row with barriers (a fallback for a
            Triton whose ``tl.gather`` misbehaves).
        recursion_warps: warps of the recursion kernel, a power of two in [1, 16]; ``None``:
            ``BLOCK / 32`` clamped to [1, 16] (one state of each vector per thread).
        directions: ``"concurrent"`` runs alpha and beta in one launch of grid ``(B, 2)``;
            ``"sequential"`` in two launches of grid ``(B, 1)``. One launch of ``2 B`` programs
            never needs more waves than two of ``B``, and the programs are latency-bound chains
            that share a multiprocessor well.
    """

    shift: str = "gather"
    recursion_warps: int | None = None
    directions: str = "concurrent"

    def __post_init__(self):
        if self.shift not in _SHIFTS:
            raise ValueError(f"KernelConfig.shift must be one of {_SHIFTS}, got {self.shift!r}")
        if self.directions not in _DIRECTIONS:
            raise ValueError(f"KernelConfig.directions must be one of {_DIRECTIONS}, got {self.directions!r}")
        warps = self.recursion_warps
        if warps is not None and (isinstance(warps, bool) or not isinstance(warps, int)
                                  or warps not in (1, 2, 4, 8, 16)):
            raise ValueError(f"KernelConfig.recursion_warps must be None or one of 1, 2, 4, 8, 16, got {warps!r}")


#: The shipped kernel configuration.
DEFAULT_KERNEL_CONFIG = KernelConfig()


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


@triton.jit
def _target_start(target_len_ptr, b, stride_tb, CONCAT: tl.constexpr, BLOCK_B: tl.constexpr):
    """Offset of sample ``b``'s first label: ``b * stride_tb`` (padded) or ``sum(L[:b])`` (concat).

    The exclusive prefix sum is recomputed by every program (fixed order, ``B / BLOCK_B`` vector
    loads): cheaper than a separate ``cumsum`` launch.
    """
    if CONCAT:
        offs = tl.arange(0, BLOCK_B)
        acc = tl.zeros([BLOCK_B], tl.int64)
        for j0 in range(0, b, BLOCK_B):
            j = j0 + offs
            acc += tl.load(target_len_ptr + j, mask=j < b, other=0).to(tl.int64)
        return tl.sum(acc, axis=0)
    else:
        return b * stride_tb


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------


@triton.jit
def _emit_kernel(
    logits_ptr, stride_lb, stride_lt, stride_lc,
    targets_ptr, target_stride, stride_tb,
    input_len_ptr, target_len_ptr,
    lse_ptr,  # (B, T) out, accumulation dtype
    emit_ptr, stride_eb, stride_et,  # (B, T, W) out: [lp(blank), lp(l_0), .., lp(l_{L-1})]
    T, C, blank,
    BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr,
    CONCAT: tl.constexpr, BLOCK_B: tl.constexpr,
):
    """Row log-sum-exp and the compact per-state emission log-probs of BLOCK_T frames of sample b."""
    b = tl.program_id(0).to(tl.int64)
    acc_dtype = lse_ptr.dtype.element_ty
    NEG: tl.constexpr = float("-inf")
    n_t = tl.load(input_len_ptr + b)
    ts = tl.program_id(1).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
    row_ok = ts < n_t  # frames past the input length are never read: skip them
    base = logits_ptr + b * stride_lb + ts * stride_lt
    cols = tl.arange(0, BLOCK_C)
    run_max = tl.full([BLOCK_T], NEG, acc_dtype)
    run_sum = tl.zeros([BLOCK_T], acc_dtype)
    for c0 in range(0, C, BLOCK_C):
        cls = c0 + cols
        mask = row_ok[:, None] & (cls < C)[None, :]
        x = tl.load(base[:, None] + cls[None, :] * stride_lc, mask=mask, other=NEG).to(acc_dtype)
        new_max = tl.maximum(run_max, tl.max(x, axis=1))
        safe = tl.where(new_max == NEG, 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe) + tl.sum(tl.exp(x - safe[:, None]), axis=1)
        run_max = new_max
    safe = tl.where(run_max == NEG, 0.0, run_max)
    lse = safe + tl.log(run_sum)
    tl.store(lse_ptr + b * T + ts, lse, mask=row_ok)

    e_row = emit_ptr + b * stride_eb + ts * stride_et
    x_blank = tl.load(base + blank * stride_lc, mask=row_ok, other=NEG).to(acc_dtype)
    tl.store(e_row, _log_prob(x_blank, lse), mask=row_ok)
    n_l = tl.load(target_len_ptr + b)
    tgt = targets_ptr + _target_start(target_len_ptr, b, stride_tb, CONCAT, BLOCK_B)
    ks = tl.arange(0, BLOCK_K)
    for k0 in range(0, n_l, BLOCK_K):
        k = k0 + ks
        k_ok = k < n_l
        lab = tl.load(tgt + k * target_stride, mask=k_ok, other=0).to(tl.int64)
        mask = row_ok[:, None] & k_ok[None, :]
        x = tl.load(base[:, None] + lab[None, :] * stride_lc, mask=mask, other=NEG).to(acc_dtype)
        tl.store(e_row[:, None] + 1 + k[None, :], _log_prob(x, lse[:, None]), mask=mask)


@triton.jit
def _alpha_step(a_blank, a_label, e_blank, e_label, ok, dst, width, idx, can_skip, is_blank,
                is_label, scratch, BLOCK: tl.constexpr, STORE: tl.constexpr, SCRATCH: tl.constexpr):
    """alpha_{t-1} -> alpha_t (committed only where the scalar ``ok`` = ``t < input_length``)."""
    NEG: tl.constexpr = float("-inf")
    before = _shift(a_label, idx, scratch, -1, BLOCK, SCRATCH)  # alpha_label[i-1]
    new_blank = _lse2(a_blank, before) + e_blank
    new_label = _lse3(a_label, a_blank, tl.where(can_skip, before, NEG)) + e_label
    new_blank = tl.where(is_blank, new_blank, NEG)
    new_label = tl.where(is_label, new_label, NEG)
    if STORE:
        tl.store(dst + idx, new_blank, mask=is_blank & ok)
        tl.store(dst + width + idx, new_label, mask=is_label & ok)
    return tl.where(ok, new_blank, a_blank), tl.where(ok, new_label, a_label)


@triton.jit
def _beta_step(b_blank, b_char, e_blank, e_char, ok, dst, width, idx, can_skip, is_blank, is_char,
               scratch, BLOCK: tl.constexpr, SCRATCH: tl.constexpr):
    """Store beta_t, then beta_t -> beta_{t-1} (committed only where ``ok`` = ``t >= 0``).

    ``b_char[i]`` holds character ``i - 1`` (see the module docstring), so both updates need the
    same single shifted vector ``g_char[i + 1]`` (= character ``i``).
    """
    NEG: tl.constexpr = float("-inf")
    tl.store(dst + idx, b_blank, mask=is_blank & ok)
    tl.store(dst + width - 1 + idx, b_char, mask=is_char & ok)
    g_blank = b_blank + e_blank
    g_char = b_char + e_char
    char_i = _shift(g_char, idx, scratch, 1, BLOCK, SCRATCH)  # character i (g_char[i + 1])
    new_blank = tl.where(is_blank, _lse2(g_blank, char_i), NEG)
    new_char = tl.where(is_char, _lse3(g_char, g_blank, tl.where(can_skip, char_i, NEG)), NEG)
    return tl.where(ok, new_blank, b_blank), tl.where(ok, new_char, b_char)


@triton.jit
def _recursion_kernel(
    emit_ptr, stride_eb, stride_et,  # (B, T, W) from _emit_kernel
    targets_ptr, target_stride, stride_tb,
    input_len_ptr, target_len_ptr,
    nll_ptr, out_ptr,  # (B,) out: raw NLL, and the per-sample loss (zero_infinity applied)
    state_ptr, stride_sd, stride_sb, stride_st, width,  # (2, B, T, 2W): alpha, beta
    scratch_ptr,  # (B, 2, BLOCK), only used when SCRATCH
    dir_base,  # direction = program_id(1) + dir_base (sequential mode: one launch per direction)
    BLOCK: tl.constexpr, STORE: tl.constexpr, SCRATCH: tl.constexpr, ZERO_INF: tl.constexpr,
    CONCAT: tl.constexpr, BLOCK_B: tl.constexpr,
):
    """Grid (B, 1 or 2): program (b, 0) runs alpha forward in time (and writes the NLL), program
    (b, 1) runs beta backward in time, concurrently. Each only reads the emission buffer and writes
    its own half of ``state``: the two never exchange data.
    Kept whole (#71, a cohesive kernel): the step math is in _alpha_step/_beta_step; one prefetching loop remains."""
    b = tl.program_id(0).to(tl.int64)
    direction = tl.program_id(1) + dir_base
    acc_dtype = emit_ptr.dtype.element_ty
    NEG: tl.constexpr = float("-inf")
    n_t = tl.load(input_len_ptr + b)
    n_l = tl.load(target_len_ptr + b)
    idx = tl.arange(0, BLOCK)
    is_label = idx < n_l
    is_blank = idx <= n_l
    tgt = targets_ptr + _target_start(target_len_ptr, b, stride_tb, CONCAT, BLOCK_B)
    lab = tl.load(tgt + idx * target_stride, mask=is_label, other=0).to(tl.int64)
    lab_prev = tl.load(tgt + (idx - 1) * target_stride, mask=is_label & (idx > 0), other=0)
    # Character i may be entered from character i - 1 (alpha), i.e. character i - 1 may jump to
    # character i (beta): both need different labels.
    can_skip = is_label & (idx > 0) & (lab != lab_prev.to(tl.int64))
    scratch = scratch_ptr + (b * 2 + direction) * BLOCK
    e_row = emit_ptr + b * stride_eb
    s_row = state_ptr + direction * stride_sd + b * stride_sb
    # The frame loop is unrolled by 4 and the emissions of the next 4 frames are loaded one chunk
    # ahead (contiguous vectors), so their latency overlaps 4 steps of arithmetic.
    if direction == 0:
        e_lab = e_row + 1 + idx  # character i's emission is entry 1 + i of a frame
        # alpha_{-1}: log 1 on state 0 (the first blank), -inf elsewhere.
        a_blank = tl.where(idx == 0, 0.0, NEG).to(acc_dtype)
        a_label = tl.full([BLOCK], NEG, acc_dtype)
        eb0 = tl.load(e_row, mask=0 < n_t, other=NEG)
        eb1 = tl.load(e_row + stride_et, mask=1 < n_t, other=NEG)
        eb2 = tl.load(e_row + 2 * stride_et, mask=2 < n_t, other=NEG)
        eb3 = tl.load(e_row + 3 * stride_et, mask=3 < n_t, other=NEG)
        el0 = tl.load(e_lab, mask=is_label & (0 < n_t), other=NEG)
        el1 = tl.load(e_lab + stride_et, mask=is_label & (1 < n_t), other=NEG)
        el2 = tl.load(e_lab + 2 * stride_et, mask=is_label & (2 < n_t), other=NEG)
        el3 = tl.load(e_lab + 3 * stride_et, mask=is_label & (3 < n_t), other=NEG)
        for t0 in range(0, n_t, 4):
            t1 = t0 + 4
            fb0 = tl.load(e_row + t1 * stride_et, mask=t1 < n_t, other=NEG)
            fb1 = tl.load(e_row + (t1 + 1) * stride_et, mask=t1 + 1 < n_t, other=NEG)
            fb2 = tl.load(e_row + (t1 + 2) * stride_et, mask=t1 + 2 < n_t, other=NEG)
            fb3 = tl.load(e_row + (t1 + 3) * stride_et, mask=t1 + 3 < n_t, other=NEG)
            fl0 = tl.load(e_lab + t1 * stride_et, mask=is_label & (t1 < n_t), other=NEG)
            fl1 = tl.load(e_lab + (t1 + 1) * stride_et, mask=is_label & (t1 + 1 < n_t), other=NEG)
            fl2 = tl.load(e_lab + (t1 + 2) * stride_et, mask=is_label & (t1 + 2 < n_t), other=NEG)
            fl3 = tl.load(e_lab + (t1 + 3) * stride_et, mask=is_label & (t1 + 3 < n_t), other=NEG)
            dst = s_row + t0 * stride_st
            a_blank, a_label = _alpha_step(a_blank, a_label, eb0, el0, t0 < n_t, dst, width, idx,
                                           can_skip, is_blank, is_label, scratch, BLOCK, STORE, SCRATCH)
            a_blank, a_label = _alpha_step(a_blank, a_label, eb1, el1, t0 + 1 < n_t, dst + stride_st,
                                           width, idx, can_skip, is_blank, is_label, scratch, BLOCK,
                                           STORE, SCRATCH)
            a_blank, a_label = _alpha_step(a_blank, a_label, eb2, el2, t0 + 2 < n_t,
                                           dst + 2 * stride_st, width, idx, can_skip, is_blank,
                                           is_label, scratch, BLOCK, STORE, SCRATCH)
            a_blank, a_label = _alpha_step(a_blank, a_label, eb3, el3, t0 + 3 < n_t,
                                           dst + 3 * stride_st, width, idx, can_skip, is_blank,
                                           is_label, scratch, BLOCK, STORE, SCRATCH)
            eb0 = fb0
            eb1 = fb1
            eb2 = fb2
            eb3 = fb3
            el0 = fl0
            el1 = fl1
            el2 = fl2
            el3 = fl3
        last_blank = tl.max(tl.where(idx == n_l, a_blank, NEG), axis=0)
        last_label = tl.max(tl.where(idx == n_l - 1, a_label, NEG), axis=0)
        nll = -_lse2(last_blank, last_label)
        tl.store(nll_ptr + b, nll)
        if ZERO_INF:
            nll = tl.where(nll == float("inf"), 0.0, nll)
        tl.store(out_ptr + b, nll)
    else:
        # Entry i of the character vector is character i - 1 (entry 0 unused), whose emission is
        # entry i of a frame; then one shift per step suffices (module docstring).
        is_char = (idx >= 1) & is_blank
        e_chr = e_row + idx
        # beta_{T-1}: log 1 on the two final states (last blank, last character).
        b_blank = tl.where(idx == n_l, 0.0, NEG).to(acc_dtype)
        b_char = tl.where(is_char & (idx == n_l), 0.0, NEG).to(acc_dtype)
        t_top = n_t - 1
        eb0 = tl.load(e_row + t_top * stride_et, mask=0 < n_t, other=NEG)
        eb1 = tl.load(e_row + (t_top - 1) * stride_et, mask=1 < n_t, other=NEG)
        eb2 = tl.load(e_row + (t_top - 2) * stride_et, mask=2 < n_t, other=NEG)
        eb3 = tl.load(e_row + (t_top - 3) * stride_et, mask=3 < n_t, other=NEG)
        ec0 = tl.load(e_chr + t_top * stride_et, mask=is_char & (0 < n_t), other=NEG)
        ec1 = tl.load(e_chr + (t_top - 1) * stride_et, mask=is_char & (1 < n_t), other=NEG)
        ec2 = tl.load(e_chr + (t_top - 2) * stride_et, mask=is_char & (2 < n_t), other=NEG)
        ec3 = tl.load(e_chr + (t_top - 3) * stride_et, mask=is_char & (3 < n_t), other=NEG)
        for k0 in range(0, n_t, 4):
            k1 = k0 + 4
            t1 = t_top - k1
            fb0 = tl.load(e_row + t1 * stride_et, mask=k1 < n_t, other=NEG)
            fb1 = tl.load(e_row + (t1 - 1) * stride_et, mask=k1 + 1 < n_t, other=NEG)
            fb2 = tl.load(e_row + (t1 - 2) * stride_et, mask=k1 + 2 < n_t, other=NEG)
            fb3 = tl.load(e_row + (t1 - 3) * stride_et, mask=k1 + 3 < n_t, other=NEG)
            fc0 = tl.load(e_chr + t1 * stride_et, mask=is_char & (k1 < n_t), other=NEG)
            fc1 = tl.load(e_chr + (t1 - 1) * stride_et, mask=is_char & (k1 + 1 < n_t), other=NEG)
            fc2 = tl.load(e_chr + (t1 - 2) * stride_et, mask=is_char & (k1 + 2 < n_t), other=NEG)
            fc3 = tl.load(e_chr + (t1 - 3) * stride_et, mask=is_char & (k1 + 3 < n_t), other=NEG)
            dst = s_row + (t_top - k0) * stride_st
            b_blank, b_char = _beta_step(b_blank, b_char, eb0, ec0, k0 < n_t, dst, width, idx,
                                         can_skip, is_blank, is_char, scratch, BLOCK, SCRATCH)
            b_blank, b_char = _beta_step(b_blank, b_char, eb1, ec1, k0 + 1 < n_t, dst - stride_st,
                                         width, idx, can_skip, is_blank, is_char, scratch, BLOCK,
                                         SCRATCH)
            b_blank, b_char = _beta_step(b_blank, b_char, eb2, ec2, k0 + 2 < n_t,
                                         dst - 2 * stride_st, width, idx, can_skip, is_blank,
                                         is_char, scratch, BLOCK, SCRATCH)
            b_blank, b_char = _beta_step(b_blank, b_char, eb3, ec3, k0 + 3 < n_t,
                                         dst - 3 * stride_st, width, idx, can_skip, is_blank,
                                         is_char, scratch, BLOCK, SCRATCH)
            eb0 = fb0
            eb1 = fb1
            eb2 = fb2
            eb3 = fb3
            ec0 = fc0
            ec1 = fc1
            ec2 = fc2
            ec3 = fc3


@triton.jit
def _grad_kernel(
    logits_ptr, stride_lb, stride_lt, stride_lc,
    lse_ptr,
    state_ptr, stride_sd, stride_sb, stride_st, width,
    targets_ptr, target_stride, stride_tb,
    input_len_ptr, target_len_ptr,
    nll_ptr,
    grad_out_ptr, grad_out_stride,  # grad_output: (B,) for 'none', a scalar (stride 0) otherwise
    grad_ptr,  # (B, T, C) contiguous, dtype of the logits
    batch, T, C, blank,
    BLOCK: tl.constexpr, CHAR_BLOCK: tl.constexpr, BLOCK_C: tl.constexpr, MEAN: tl.constexpr,
    CONCAT: tl.constexpr, BLOCK_B: tl.constexpr,
):
    """grad[b, t, c] = scale_b * (softmax - occupancy of class c); one program per (b, t) row.

    occupancy of state s at t = exp(alpha_t(s) + beta_t(s) + nll_b). The whole frame's alpha,
    beta and labels are loaded at once (independent loads, one memory latency); only the logits
    are walked in class chunks, each chunk's load issued one chunk ahead."""
    r = tl.program_id(0).to(tl.int64)
    b = r // T
    t = r % T
    acc_dtype = lse_ptr.dtype.element_ty
    NEG: tl.constexpr = float("-inf")
    nll = tl.load(nll_ptr + b)
    n_t = tl.load(input_len_ptr + b)
    live = (t < n_t) & (nll < float("inf"))
    n_l = tl.load(target_len_ptr + b)
    scale = tl.load(grad_out_ptr + b * grad_out_stride).to(acc_dtype)
    if MEAN:
        scale = scale / tl.maximum(n_l, 1).to(acc_dtype) / batch
    n_l = tl.where(live, n_l, -1)  # -1: nothing below is loaded for dead rows
    lse = tl.load(lse_ptr + r, mask=live, other=0.0)
    a_row = state_ptr + b * stride_sb + t * stride_st
    b_row = a_row + stride_sd
    tgt = targets_ptr + _target_start(target_len_ptr, b, stride_tb, CONCAT, BLOCK_B)
    idx = tl.arange(0, BLOCK)  # blank states 0..L
    is_blank = idx <= n_l
    a_blank = tl.load(a_row + idx, mask=is_blank, other=NEG)
    b_blank = tl.load(b_row + idx, mask=is_blank, other=NEG)
    ch = tl.arange(0, CHAR_BLOCK)  # character states 0..L-1
    is_char = ch < n_l
    a_char = tl.load(a_row + width + ch, mask=is_char, other=NEG)
    b_char = tl.load(b_row + width + ch, mask=is_char, other=NEG)
    lab = tl.load(tgt + ch * target_stride, mask=is_char, other=-1).to(tl.int64)
    blank_occ = tl.sum(tl.where(is_blank, tl.exp(a_blank + b_blank + nll), 0.0), axis=0)
    char_occ = tl.where(is_char, tl.exp(a_char + b_char + nll), 0.0)  # (CHAR_BLOCK,)

    row = logits_ptr + b * stride_lb + t * stride_lt
    out = grad_ptr + r * C
    cols = tl.arange(0, BLOCK_C)
    x_next = tl.load(row + cols * stride_lc, mask=(cols < C) & live, other=NEG)
    for c0 in range(0, C, BLOCK_C):
        cls = c0 + cols
        x = x_next.to(acc_dtype)
        ahead = cls + BLOCK_C
        x_next = tl.load(row + ahead * stride_lc, mask=(ahead < C) & live, other=NEG)
        soft = tl.where(x == NEG, 0.0, tl.exp(x - lse))
        # (states x classes) tile, reduced over the states: every character state adds its
        # occupancy to its own class; fixed shape, fixed order, no atomics.
        occ = tl.sum(tl.where(lab[:, None] == cls[None, :], char_occ[:, None], 0.0), axis=0)
        occ = tl.where(cls == blank, blank_occ, occ)
        g = tl.where(live, scale * (soft - occ), 0.0)
        tl.store(out + cls, g.to(grad_ptr.dtype.element_ty), mask=cls < C)


@triton.jit
def _reduce_kernel(out_ptr, target_len_ptr, loss_ptr, batch, MEAN: tl.constexpr,
                   BLOCK_B: tl.constexpr):
    """Single program: ``sum`` or ``mean`` of the per-sample losses, in a fixed order."""
    acc_dtype = out_ptr.dtype.element_ty
    offs = tl.arange(0, BLOCK_B)
    total = tl.zeros([BLOCK_B], acc_dtype)
    for b0 in range(0, batch, BLOCK_B):
        j = b0 + offs
        ok = j < batch
        v = tl.load(out_ptr + j, mask=ok, other=0.0)
        if MEAN:
            v = v / tl.maximum(tl.load(target_len_ptr + j, mask=ok, other=1), 1).to(acc_dtype)
        total += v
    loss = tl.sum(total, axis=0)
    if MEAN:
        loss = loss / batch
    tl.store(loss_ptr, loss)


# ----------------------------------------------------------------------------------------------
# Host side
# ----------------------------------------------------------------------------------------------


def kernel_configs(classes: int, max_target_length: int, config: KernelConfig = DEFAULT_KERNEL_CONFIG) -> dict:
    """Block sizes and warps of each kernel for ``C`` classes and labels up to ``max_target_length``.

    Chosen from the kernels compiled for sm_90 without a GPU (``benchmarks/ctc_static.py``):

    * ``emit``: ~1024-entry ``(frames x classes)`` tiles, 8 per thread with 4 warps (32 x 128
      tiles took 246 registers per thread, i.e. 2 resident programs per multiprocessor; 8 x 128
      take 48, i.e. 10).
    * ``recursion``: one state of each vector per thread (``BLOCK / 32`` warps, in [1, 16]). The
      frames are a serial chain, so what counts is the instructions of one warp per frame: at
      ``BLOCK = 128``, ~265 with 2 warps (two states per thread), ~145 with 4.
      ``config.recursion_warps`` overrides the warps (benchmarking).
    * ``grad``: a ``(character states x class chunk)`` tile of ~1024 entries with 2 warps.
    """
    block = triton.next_power_of_2(max_target_length + 1)  # blank states 0..L
    char_block = triton.next_power_of_2(max(max_target_length, 1))  # character states 0..L-1
    classes_pow2 = triton.next_power_of_2(classes)
    emit_c = min(classes_pow2, 1024)
    emit_t = max(1, min(32, 1024 // emit_c))
    emit_k = min(triton.next_power_of_2(max_target_length + 1), max(16, 1024 // emit_t))
    return {
        "emit": dict(BLOCK_T=emit_t, BLOCK_C=emit_c, BLOCK_K=emit_k, num_warps=4),
        "recursion": dict(BLOCK=block, num_warps=config.recursion_warps or max(1, min(16, block // 32))),
        "grad": dict(BLOCK=block, CHAR_BLOCK=char_block,
                     BLOCK_C=max(1, min(classes_pow2, _GRAD_TILE // char_block)), num_warps=2),
    }


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


class _Prepared:
    """Targets as (base tensor, element stride, row stride or concatenated) plus block sizes.

    No device work and no synchronisation when ``max_target_length`` is given (``ctc_loss`` passes
    the value its validation read back) or the targets are padded with ``S <= MAX_TARGET_LENGTH``
    (then ``S`` bounds the label lengths).
    """

    def __init__(self, logits, targets, input_lengths, target_lengths, max_target_length,
                 config: KernelConfig = DEFAULT_KERNEL_CONFIG):
        batch = logits.shape[0]
        self.concat = targets.dim() == 1
        if max_target_length is not None:
            max_len = int(max_target_length)
        elif not self.concat:
            max_len = targets.shape[1]  # an upper bound without a device sync
            if max_len > MAX_TARGET_LENGTH and batch:
                max_len = int(target_lengths.max())
        else:
            max_len = int(target_lengths.max()) if batch else 0
        if max_len > MAX_TARGET_LENGTH:
            raise ValueError(
                f"the fused Triton CTC loss supports target lengths up to MAX_TARGET_LENGTH="
                f"{MAX_TARGET_LENGTH} characters ({2 * MAX_TARGET_LENGTH + 1} extended states), "
                f"got a target of length {max_len}; use impl='torch' for longer labels"
            )
        if targets.numel() == 0:  # keep a valid pointer for the (fully masked) label loads
            targets = torch.zeros(1, dtype=targets.dtype, device=logits.device)
            self.stride, self.stride_b = 1, 0
        elif self.concat:
            self.stride, self.stride_b = targets.stride(0), 0
        else:
            self.stride, self.stride_b = targets.stride(1), targets.stride(0)
        self.targets = targets
        self.width = max_len + 1  # W: one blank + max_len label entries per frame
        self.block = triton.next_power_of_2(max_len + 1)
        self.configs = kernel_configs(logits.shape[2], max_len, config)
        self.scratch = config.shift == "scratch"
        self.concurrent = config.directions == "concurrent"
        self.block_b = min(1024, triton.next_power_of_2(max(batch, 1)))
        self.input_lengths = input_lengths.contiguous()
        self.target_lengths = target_lengths.contiguous()

    def target_args(self):
        return self.targets, self.stride, self.stride_b


def _forward(logits, prep: _Prepared, blank: int, reduction: str, zero_infinity: bool,
             need_grad: bool):
    """(loss, nll (B,), lse (B, T), state (2, B, T, 2W) or None)."""
    batch, frames, classes = logits.shape
    acc_dtype = _acc_dtype(logits.dtype)
    device = logits.device
    width = prep.width
    lse = torch.empty((batch, frames), dtype=acc_dtype, device=device)
    emit = torch.empty((batch, frames, width), dtype=acc_dtype, device=device)
    nll = torch.empty(batch, dtype=acc_dtype, device=device)
    out = torch.empty(batch, dtype=acc_dtype, device=device)
    if need_grad:
        state = torch.empty((2, batch, frames, 2 * width), dtype=acc_dtype, device=device)
    else:
        state = torch.empty((1, 1, 1, 1), dtype=acc_dtype, device=device)
    if batch == 0:
        per_sample = out
        if reduction == "none":
            return per_sample, nll, lse, (state if need_grad else None)
        loss = per_sample.sum() if reduction == "sum" else per_sample.mean()
        return loss, nll, lse, (state if need_grad else None)
    if frames:
        emit_cfg = prep.configs["emit"]
        _emit_kernel[(batch, triton.cdiv(frames, emit_cfg["BLOCK_T"]))](
            logits, *logits.stride(), *prep.target_args(),
            prep.input_lengths, prep.target_lengths,
            lse, emit, emit.stride(0), emit.stride(1),
            frames, classes, blank, CONCAT=prep.concat, BLOCK_B=prep.block_b, **emit_cfg,
        )
    scratch = prep.scratch
    scratch_buf = torch.empty((batch, 2, prep.block) if scratch else (1,), dtype=acc_dtype,
                              device=device)
    if not need_grad:
        launches = [(1, 0)]  # (directions in the grid, first direction)
    elif prep.concurrent:
        launches = [(2, 0)]
    else:
        launches = [(1, 0), (1, 1)]
    recursion_cfg = prep.configs["recursion"]
    for n_dir, dir_base in launches:
        _recursion_kernel[(batch, n_dir)](
            emit, emit.stride(0), emit.stride(1), *prep.target_args(),
            prep.input_lengths, prep.target_lengths,
            nll, out, state, *state.stride()[:3], width, scratch_buf, dir_base,
            STORE=need_grad, SCRATCH=scratch, ZERO_INF=bool(zero_infinity),
            CONCAT=prep.concat, BLOCK_B=prep.block_b, **recursion_cfg,
        )
    if reduction == "none":
        loss = out
    else:
        loss = torch.empty((), dtype=acc_dtype, device=device)
        _reduce_kernel[(1,)](out, prep.target_lengths, loss, batch, MEAN=reduction == "mean",
                             BLOCK_B=prep.block_b, num_warps=4)
    return loss, nll, lse, (state if need_grad else None)


def _backward(logits, prep: _Prepared, blank: int, reduction: str, nll, lse, state, grad_output):
    """Gradient w.r.t. the raw logits; the kernel folds the reduction and ``grad_output``."""
    batch, frames, classes = logits.shape
    grad = torch.empty((batch, frames, classes), dtype=logits.dtype, device=logits.device)
    if batch * frames == 0:
        return grad
    go_stride = grad_output.stride(0) if grad_output.dim() else 0
    _grad_kernel[(batch * frames,)](
        logits, *logits.stride(), lse,
        state, *state.stride()[:3], prep.width,
        *prep.target_args(),
        prep.input_lengths, prep.target_lengths,
        nll, grad_output, go_stride, grad,
        batch, frames, classes, blank,
        MEAN=reduction == "mean", CONCAT=prep.concat, BLOCK_B=prep.block_b,
        **prep.configs["grad"],
    )
    return grad


class _FusedCTCLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, input_lengths, target_lengths, blank, reduction, zero_infinity,
                need_grad, max_target_length, config):
        prep = _Prepared(logits, targets, input_lengths, target_lengths, max_target_length, config)
        loss, nll, lse, state = _forward(logits, prep, blank, reduction, zero_infinity, need_grad)
        if need_grad:
            ctx.prep = prep
            ctx.blank = blank
            ctx.reduction = reduction
            ctx.save_for_backward(logits, nll, lse, state)
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_output):
        logits, nll, lse, state = ctx.saved_tensors
        grad = _backward(logits, ctx.prep, ctx.blank, ctx.reduction, nll, lse, state, grad_output)
        return grad, None, None, None, None, None, None, None, None, None


def fused_ctc_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
    max_target_length: int | None = None,
    config: KernelConfig | None = None,
) -> torch.Tensor:
    """CTC loss of raw ``logits`` ``(B, T, C)`` computed by the fused Triton kernels.

    Arguments are assumed validated by ``text_recognizer.ctc.loss.ctc_loss`` (lengths are int
    ``(B,)`` tensors on ``logits.device``, target ids in range and never ``blank``). Raises
    ``ValueError`` for labels longer than :data:`MAX_TARGET_LENGTH`.

    ``max_target_length``: ``max(target_lengths)`` if known on the host (``ctc_loss`` passes it).
    It sizes the buffers; without it, padded targets use their width ``S`` (no synchronisation
    unless ``S > MAX_TARGET_LENGTH``) and concatenated targets read the maximum back (one sync).
    It must not be smaller than the true maximum.

    ``config``: launch choices (:class:`KernelConfig`); ``None`` means :data:`DEFAULT_KERNEL_CONFIG`.
    """
    if config is None:
        config = DEFAULT_KERNEL_CONFIG
    elif not isinstance(config, KernelConfig):
        raise TypeError(f"config must be a KernelConfig or None, got {type(config).__name__}")
    need_grad = torch.is_grad_enabled() and logits.requires_grad
    return _FusedCTCLoss.apply(
        logits, targets, input_lengths, target_lengths, int(blank), reduction, bool(zero_infinity),
        need_grad, max_target_length, config,
    )
