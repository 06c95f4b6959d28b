"""Benchmark and GPU check of the fused Triton CTC loss against PyTorch's CTC implementations.

Usage (from the repository root)::

    python benchmarks/ctc_bench.py --quick --json ctc_bench.json   # ~a few minutes on one GPU
    python benchmarks/ctc_bench.py                                  # the full shape grid
    python benchmarks/ctc_bench.py --no-sweep                       # skip the kernel-config sweep

With CUDA it measures, for every shape, forward+backward time (CUDA events, median over iterations
after warm-up) and peak extra memory (``torch.cuda.max_memory_allocated`` above what was allocated
before the call) of

* ``ours``   - ``fused_ctc_loss`` (raw logits in, the Triton kernels do the log-softmax);
* ``torch``  - PyTorch's native CUDA CTC: ``log_softmax`` in float32 + ``F.ctc_loss`` with int64
  padded targets on the GPU;
* ``cudnn``  - PyTorch's cuDNN CTC where its conditions hold (float32, blank 0, int32 concatenated
  targets and lengths on the CPU, all input lengths == T, labels < 256, cuDNN enabled).

and prints ratios ``torch_time / ours_time`` (> 1: ours is faster). On the median shape it also
times ours end to end through the validated ``ctc_loss(impl='triton')`` (lengths on the GPU, and
lengths on the CPU: the common case, checked on the host), the forward alone without a gradient,
and counts the CUDA kernels one forward + backward launches (torch profiler). It then checks
determinism (10 runs, bitwise equal loss and gradient), agreement with a float64 reference on the
GPU (our float32 error next to PyTorch's float32 error), and, unless ``--no-sweep``, times the
recursion kernel with every ``KernelConfig`` (warp counts, the scratch-memory shift, concurrent vs
sequential alpha/beta launches) and each one's difference from the default (bitwise zero expected).

Without CUDA it says so and runs only the correctness part, through Triton's CPU interpreter on
tiny shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path

import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:  # must happen before the kernels are defined (Triton decides at @triton.jit time)
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch.nn.functional as F  # noqa: E402 (after TRITON_INTERPRET, on purpose)

from text_recognizer.ctc import triton_ctc  # noqa: E402
from text_recognizer.ctc.feasibility import required_frames  # noqa: E402
from text_recognizer.ctc.loss import ctc_loss  # noqa: E402

FULL_GRID = dict(B=(32, 128, 256), T=(128, 256, 512), C=(80, 100), L=(32, 64, 128))
QUICK_SHAPES = [  # (B, T, C, L)
    (128, 256, 80, 64),
    (128, 256, 100, 64),
    (32, 128, 80, 32),
    (256, 256, 100, 64),
    (128, 512, 80, 128),
    (256, 512, 100, 128),
]
MEDIAN_SHAPES = [(128, 256, 80, 64), (128, 256, 100, 64)]


# ----------------------------------------------------------------------------------------------
# problem construction
# ----------------------------------------------------------------------------------------------


def make_problem(batch, frames, classes, length, dtype, device, seed=0):
    """Random logits and random labels (ids 1..C-1, blank 0), all of length ``length``."""
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(batch, frames, classes, generator=gen) * 2).to(device=device, dtype=dtype)
    targets = torch.randint(1, classes, (batch, length), generator=gen)
    input_lengths = torch.full((batch,), frames, dtype=torch.int64)
    target_lengths = torch.full((batch,), length, dtype=torch.int64)
    return logits, targets, input_lengths, target_lengths


def feasible(frames, targets):
    return all(required_frames(row.tolist()) <= frames for row in targets)


def ours_fn(targets, input_lengths, target_lengths, device, config=None):
    tg, il, tl = targets.to(device), input_lengths.to(device), target_lengths.to(device)

    def fn(x):
        return triton_ctc.fused_ctc_loss(x, tg, il, tl, blank=0, reduction="mean", config=config)

    return fn


def ours_validated_fn(targets, input_lengths, target_lengths, device):
    tg, il, tl = targets.to(device), input_lengths.to(device), target_lengths.to(device)

    def fn(x):
        return ctc_loss(x, tg, il, tl, reduction="mean", impl="triton")

    return fn


def torch_fn(targets, input_lengths, target_lengths, device):
    tg, il, tl = targets.to(device), input_lengths.to(device), target_lengths.to(device)

    def fn(x):
        log_probs = x.float().log_softmax(-1).transpose(0, 1)
        return F.ctc_loss(log_probs, tg, il, tl, blank=0, reduction="mean")

    return fn


def cudnn_fn(targets, input_lengths, target_lengths, logits):
    """The cuDNN-eligible call, or None when PyTorch would not take the cuDNN path."""
    if logits.dtype != torch.float32 or not torch.backends.cudnn.enabled:
        return None
    # cuDNN's rules: int32 targets and lengths on the CPU (all lengths equal: flatten == concatenation)
    concat = targets.flatten().to("cpu", torch.int32)
    il, tl = input_lengths.to("cpu", torch.int32), target_lengths.to("cpu", torch.int32)
    probe = logits.detach().log_softmax(-1).transpose(0, 1)
    try:
        eligible = torch._use_cudnn_ctc_loss(probe, concat, il.tolist(), tl.tolist(), 0)
    except Exception:  # pragma: no cover - private API
        eligible = int(tl.max()) < 256 and bool((il == logits.shape[1]).all())
    if not eligible:
        return None
    il_list, tl_list = il.tolist(), tl.tolist()

    def fn(x):
        log_probs = x.log_softmax(-1).transpose(0, 1)
        # lengths as Python lists: the int[] overload is the one that reaches cuDNN with CPU targets
        return F.ctc_loss(log_probs, concat, il_list, tl_list, blank=0, reduction="mean")

    return fn


# ----------------------------------------------------------------------------------------------
# measurements
# ----------------------------------------------------------------------------------------------


def time_fwd_bwd(fn, x, warmup, iters):
    """Median milliseconds of forward + backward (CUDA events)."""
    for _ in range(warmup):
        x.grad = None
        fn(x).backward()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        x.grad = None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x).backward()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def peak_extra_memory(fn, x):
    """Bytes allocated at the peak of forward + backward above what was allocated before."""
    x.grad = None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn(x).backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    x.grad = None
    return peak


def bench_shape(batch, frames, classes, length, dtype, warmup, iters):
    logits, targets, input_lengths, target_lengths = make_problem(batch, frames, classes, length, dtype, "cuda")
    x = logits.requires_grad_(True)
    row = dict(B=batch, T=frames, C=classes, L=length, dtype=str(dtype).replace("torch.", ""))
    impls = {
        "ours": ours_fn(targets, input_lengths, target_lengths, "cuda"),
        "torch": torch_fn(targets, input_lengths, target_lengths, "cuda"),
    }
    cudnn = cudnn_fn(targets, input_lengths, target_lengths, logits)
    if cudnn is not None:
        impls["cudnn"] = cudnn
    for name, fn in impls.items():
        try:
            row[f"{name}_ms"] = time_fwd_bwd(fn, x, warmup, iters)
            row[f"{name}_mib"] = peak_extra_memory(fn, x) / 2**20
        except RuntimeError as error:  # report, keep benchmarking the other paths
            if name != "cudnn":
                raise
            print(f"cudnn path failed on B={batch} T={frames}: {error}")
            row.pop("cudnn_ms", None)
    row["speedup_vs_torch"] = row["torch_ms"] / row["ours_ms"]
    if "cudnn_ms" in row:
        row["speedup_vs_cudnn"] = row["cudnn_ms"] / row["ours_ms"]
    return row


def shapes_to_run(quick):
    if quick:
        return list(QUICK_SHAPES)
    return [(b, t, c, length) for b in FULL_GRID["B"] for t in FULL_GRID["T"] for c in FULL_GRID["C"]
            for length in FULL_GRID["L"]]


def print_table(rows):
    header = (f"{'B':>4} {'T':>4} {'C':>4} {'L':>4} {'dtype':>9} | {'ours ms':>8} {'torch ms':>8} "
              f"{'cudnn ms':>8} | {'x torch':>7} {'x cudnn':>7} | {'ours MiB':>8} {'torch MiB':>9} "
              f"{'cudnn MiB':>9}")
    print(header)
    print("-" * len(header))
    for r in rows:
        if "skipped" in r:
            print(f"{r['B']:>4} {r['T']:>4} {r['C']:>4} {r['L']:>4} {r['dtype']:>9} | skipped: {r['skipped']}")
            continue
        cud_ms = f"{r['cudnn_ms']:8.3f}" if "cudnn_ms" in r else f"{'-':>8}"
        cud_x = f"{r['speedup_vs_cudnn']:7.2f}" if "speedup_vs_cudnn" in r else f"{'-':>7}"
        cud_m = f"{r['cudnn_mib']:9.1f}" if "cudnn_mib" in r else f"{'-':>9}"
        print(f"{r['B']:>4} {r['T']:>4} {r['C']:>4} {r['L']:>4} {r['dtype']:>9} | {r['ours_ms']:8.3f} "
              f"{r['torch_ms']:8.3f} {cud_ms} | {r['speedup_vs_torch']:7.2f} {cud_x} | "
              f"{r['ours_mib']:8.1f} {r['torch_mib']:9.1f} {cud_m}")


def median_summary(rows):
    picked = [r for r in rows if "skipped" not in r and (r["B"], r["T"], r["C"], r["L"]) in MEDIAN_SHAPES]
    summary = {}
    for r in picked:
        key = f"B{r['B']}_T{r['T']}_C{r['C']}_L{r['L']}_{r['dtype']}"
        summary[key] = dict(
            speedup_vs_torch=r["speedup_vs_torch"],
            speedup_vs_cudnn=r.get("speedup_vs_cudnn"),
            ours_mib=r["ours_mib"], torch_mib=r["torch_mib"],
            target_met=r["speedup_vs_torch"] >= 2.0 and r["ours_mib"] <= r["torch_mib"],
        )
    print("\nMedian-shape summary (target: >= 2x faster than torch, no more peak memory):")
    for key, s in summary.items():
        cud = f", x cudnn {s['speedup_vs_cudnn']:.2f}" if s["speedup_vs_cudnn"] else ""
        print(f"  {key}: x torch {s['speedup_vs_torch']:.2f}{cud}, memory {s['ours_mib']:.1f} vs "
              f"{s['torch_mib']:.1f} MiB -> {'MET' if s['target_met'] else 'NOT MET'}")
    return summary


def ours_cpu_lengths_fn(targets, input_lengths, target_lengths, device):
    """Validated path with the lengths left on the CPU (host-side checks, non-blocking copies)."""
    tg = targets.to(device)

    def fn(x):
        return ctc_loss(x, tg, input_lengths, target_lengths, reduction="mean", impl="triton")

    return fn


def time_forward(fn, x, warmup, iters):
    """Median milliseconds of a forward without a gradient."""
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def count_kernels(fn, x):
    """CUDA kernels launched by one forward + backward (torch profiler), or None if unavailable."""
    try:
        from torch.profiler import ProfilerActivity, profile

        x.grad = None
        fn(x).backward()  # warm (compiled, cached)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            x.grad = None
            fn(x).backward()
            torch.cuda.synchronize()
        events = [e for e in prof.events() if e.device_type.name == "CUDA"]
        per_kernel = {}
        for e in events:
            per_kernel[e.name[:60]] = per_kernel.get(e.name[:60], 0.0) + getattr(
                e, "device_time", getattr(e, "cuda_time", 0.0)) / 1000.0
        x.grad = None
        return len(events), {k: round(v, 4) for k, v in per_kernel.items()}  # name -> ms
    except Exception as error:  # pragma: no cover - profiler quirks
        print(f"  kernel count unavailable: {error!r}"[:200])
        return None, []


def end_to_end_median(warmup, iters):
    """The median shape through the validated ``ctc_loss(impl='triton')`` (adds a host sync)."""
    batch, frames, classes, length = MEDIAN_SHAPES[0]
    logits, targets, il, tl = make_problem(batch, frames, classes, length, torch.float32, "cuda")
    x = logits.requires_grad_(True)
    result = {}
    result["validated_gpu_lengths_ms"] = time_fwd_bwd(ours_validated_fn(targets, il, tl, "cuda"), x,
                                                      warmup, iters)
    result["validated_cpu_lengths_ms"] = time_fwd_bwd(ours_cpu_lengths_fn(targets, il, tl, "cuda"), x,
                                                      warmup, iters)
    result["raw_ms"] = time_fwd_bwd(ours_fn(targets, il, tl, "cuda"), x, warmup, iters)
    result["forward_no_grad_ms"] = time_forward(ours_fn(targets, il, tl, "cuda"), x, warmup, iters)
    result["torch_forward_no_grad_ms"] = time_forward(torch_fn(targets, il, tl, "cuda"), x, warmup, iters)
    count, names = count_kernels(ours_fn(targets, il, tl, "cuda"), x)
    result["kernels_fwd_bwd"], result["kernel_names"] = count, names
    # Kernels of one stream run one after another: their summed device time is the GPU's busy
    # time. What the wall-clock (CUDA events) time has beyond it is host work (Python, argument
    # binding, launches) that the GPU waited for.
    result["device_busy_ms"] = round(sum(names.values()), 4) if names else None
    print(f"\nMedian shape {MEDIAN_SHAPES[0]} float32, ours:")
    print(f"  fused_ctc_loss fwd+bwd {result['raw_ms']:.3f} ms; end to end through ctc_loss(impl='triton') "
          f"with validation: lengths on GPU {result['validated_gpu_lengths_ms']:.3f} ms, lengths on CPU "
          f"{result['validated_cpu_lengths_ms']:.3f} ms")
    print(f"  forward without grad: ours {result['forward_no_grad_ms']:.3f} ms, torch "
          f"{result['torch_forward_no_grad_ms']:.3f} ms; CUDA kernels per fwd+bwd: {count}, device ms "
          f"per kernel: {names}")
    if result["device_busy_ms"]:
        busy = result["device_busy_ms"]
        print(f"  GPU busy {busy:.3f} ms of {result['raw_ms']:.3f} ms fwd+bwd wall time "
              f"({100 * busy / result['raw_ms']:.0f}%): the rest is host overhead the GPU waited for")
    return result


def sweep(warmup, iters):
    """Every ``KernelConfig``: recursion warps, the two shift implementations, concurrent/sequential."""
    batch, frames, classes, length = MEDIAN_SHAPES[0]
    logits, targets, il, tl = make_problem(batch, frames, classes, length, torch.float32, "cuda")
    x = logits.requires_grad_(True)
    results = []
    print(f"\nSweep of KernelConfig on {MEDIAN_SHAPES[0]} float32 (default {triton_ctc.DEFAULT_KERNEL_CONFIG}):")
    configs = [triton_ctc.KernelConfig(shift=s, recursion_warps=w, directions=d)
               for d in ("concurrent", "sequential") for s in ("gather", "scratch") for w in (1, 2, 4, 8)]
    reference = loss_and_grad(ours_fn(targets, il, tl, "cuda"), x)
    for config in configs:
        fn = ours_fn(targets, il, tl, "cuda", config)
        row = dict(directions=config.directions, shift=config.shift, warps=config.recursion_warps)
        label = f"  directions={config.directions:<10} shift={config.shift:<7} warps={config.recursion_warps}"
        try:
            ms = time_fwd_bwd(fn, x, warmup, iters)
            out = loss_and_grad(fn, x)
            diff = max((out[0] - reference[0]).abs().max().item(), (out[1] - reference[1]).abs().max().item())
            results.append(dict(row, ms=ms, max_diff_vs_first=diff))
            print(f"{label}: {ms:.3f} ms, max |diff| vs the default {diff:.2e}")
        except Exception as error:  # report and go on: one failing config must not hide others
            results.append(dict(row, error=repr(error)[:300]))
            print(f"{label}: FAILED {error!r}"[:300])
    return results


# ----------------------------------------------------------------------------------------------
# correctness (GPU: moderate shapes; CPU: interpreter, tiny shapes)
# ----------------------------------------------------------------------------------------------


def loss_and_grad(fn, logits):
    x = logits.detach().clone().requires_grad_(True)
    loss = fn(x)
    weight = torch.linspace(0.5, 1.5, loss.numel(), device=loss.device, dtype=loss.dtype).reshape(loss.shape)
    (loss * weight).sum().backward()  # a non-uniform grad_output
    return loss.detach().double().cpu(), x.grad.detach().double().cpu()


def agreement(device, shapes):
    """Max abs error vs a float64 reference: ours (fp32, bf16) next to PyTorch fp32."""
    results = []
    for batch, frames, classes, length in shapes:
        logits, targets, il, tl = make_problem(batch, frames, classes, length, torch.float64, device, seed=1)
        # mixed lengths and a few repeats to make it less uniform
        il = torch.randint(max(1, frames // 2), frames + 1, (batch,), generator=torch.Generator().manual_seed(2))
        il[0] = frames
        tl = torch.randint(0, length + 1, (batch,), generator=torch.Generator().manual_seed(3))
        targets[:, 1::4] = targets[:, 0::4][:, : targets[:, 1::4].shape[1]]
        for row in range(batch):
            if required_frames(targets[row, : tl[row]].tolist()) > il[row]:
                tl[row] = 0
        args = (targets.to(device), il.to(device), tl.to(device))
        ref = loss_and_grad(lambda x, args=args: ctc_loss(x, *args, reduction="none", impl="torch"), logits)
        row = dict(B=batch, T=frames, C=classes, L=length)
        for name, dtype, impl in (("ours_fp32", torch.float32, "triton"), ("torch_fp32", torch.float32, "torch"),
                                  ("ours_bf16", torch.bfloat16, "triton")):
            loss, grad = loss_and_grad(lambda x, args=args, impl=impl: ctc_loss(x, *args, reduction="none", impl=impl),
                                       logits.to(dtype))
            row[f"{name}_loss_err"] = (loss - ref[0]).abs().max().item()
            row[f"{name}_grad_err"] = (grad - ref[1]).abs().max().item()
            row[f"{name}_nan"] = bool(torch.isnan(loss).any() or torch.isnan(grad).any())
        row["loss_err_ratio"] = row["ours_fp32_loss_err"] / max(row["torch_fp32_loss_err"], 1e-12)
        row["grad_err_ratio"] = row["ours_fp32_grad_err"] / max(row["torch_fp32_grad_err"], 1e-12)
        results.append(row)
        print(f"  {(batch, frames, classes, length)}: fp32 loss err ours {row['ours_fp32_loss_err']:.2e} "
              f"torch {row['torch_fp32_loss_err']:.2e} (ratio {row['loss_err_ratio']:.2f}); grad err ours "
              f"{row['ours_fp32_grad_err']:.2e} torch {row['torch_fp32_grad_err']:.2e} "
              f"(ratio {row['grad_err_ratio']:.2f}); bf16 loss err {row['ours_bf16_loss_err']:.2e} grad err "
              f"{row['ours_bf16_grad_err']:.2e}; NaN: {row['ours_fp32_nan'] or row['ours_bf16_nan']}")
    return results


def determinism(device, shape, runs=10):
    batch, frames, classes, length = shape
    logits, targets, il, tl = make_problem(batch, frames, classes, length, torch.float32, device, seed=4)
    fn = ours_fn(targets, il, tl, device)
    first = loss_and_grad(fn, logits)
    identical = True
    for _ in range(runs - 1):
        loss, grad = loss_and_grad(fn, logits)
        identical &= torch.equal(loss, first[0]) and torch.equal(grad, first[1])
    print(f"  determinism {shape}, {runs} runs: {'bitwise identical' if identical else 'DIFFERENT'}")
    return dict(shape=list(shape), runs=runs, bitwise_identical=bool(identical))


def correctness(device):
    print(f"\nCorrectness on {device}:")
    if device == "cuda":
        shapes = [(8, 64, 80, 16), (16, 256, 100, 64), (4, 600, 50, 300)]
        det_shape = MEDIAN_SHAPES[0]
    else:
        shapes = [(2, 8, 5, 3), (3, 12, 6, 4)]
        det_shape = (2, 8, 5, 3)
    return dict(agreement=agreement(device, shapes), determinism=determinism(device, det_shape))


# ----------------------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a handful of shapes (a few minutes)")
    parser.add_argument("--json", type=Path, help="write all results to this JSON file")
    parser.add_argument("--no-sweep", action="store_true", help="skip the KernelConfig sweep")
    parser.add_argument("--iters", type=int, default=None, help="timed iterations per measurement")
    args = parser.parse_args(argv)
    started = time.time()
    results = dict(device=torch.cuda.get_device_name() if HAS_CUDA else "cpu (Triton interpreter)",
                   torch=torch.__version__, quick=args.quick)
    try:
        import triton

        results["triton"] = triton.__version__
    except Exception:  # pragma: no cover
        pass

    if not HAS_CUDA:
        # The interpreter evaluates log(0) = -inf with numpy, which warns; -inf is intended there.
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        print("No CUDA device: GPU timings need a GPU. Running the correctness part only, through "
              "Triton's CPU interpreter on tiny shapes.")
        results["correctness"] = correctness("cpu")
    else:
        warmup = 3
        iters = args.iters or (10 if args.quick else 20)
        rows = []
        for dtype in (torch.float32, torch.bfloat16):
            for batch, frames, classes, length in shapes_to_run(args.quick):
                if dtype == torch.bfloat16 and args.quick and (batch, frames, classes, length) not in MEDIAN_SHAPES:
                    continue
                _, targets, _, _ = make_problem(batch, frames, classes, length, torch.float32, "cpu")
                if not feasible(frames, targets):
                    rows.append(dict(B=batch, T=frames, C=classes, L=length,
                                     dtype=str(dtype).replace("torch.", ""), skipped="infeasible"))
                    continue
                rows.append(bench_shape(batch, frames, classes, length, dtype, warmup, iters))
                torch.cuda.empty_cache()
        print()
        print_table(rows)
        results["timings"] = rows
        results["median_summary"] = median_summary(rows)
        results["end_to_end_median"] = end_to_end_median(warmup, iters)
        results["correctness"] = correctness("cuda")
        if not args.no_sweep:
            results["sweep"] = sweep(warmup, iters)
    results["elapsed_s"] = time.time() - started
    print(f"\nDone in {results['elapsed_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
        print(f"Results written to {args.json}")
    return results


if __name__ == "__main__":
    main()
