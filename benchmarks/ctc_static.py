"""Static analysis of the fused CTC kernels compiled for an NVIDIA GPU, on a machine without one.

Triton compiles for any CUDA architecture without a device (its wheel ships ``ptxas``,
``cuobjdump`` and ``nvdisasm``). This script compiles the three hot kernels of
``text_recognizer.ctc.triton_ctc`` with the launch configuration the host code would use for a
problem shape, and reports what the compiled code says about speed:

* registers per thread (and spills), hence how many programs fit on one multiprocessor at once
  (latency hiding for the parallel kernels);
* instructions in the SASS loops: for the serial recursion, instructions *per warp per frame*
  (the length of the serial chain), for the gradient kernel the dynamic instruction count of one
  program (one frame).

With ``--rev REV`` it does the same for the kernels of a git revision (the baseline) and prints
the ratios. These are not timings: ``benchmarks/ctc_bench.py`` on a GPU measures those.

Usage (from the repository root)::

    python benchmarks/ctc_static.py --rev b9c2fa5            # median shape (128, 256, 80, 64)
    python benchmarks/ctc_static.py --shape 256 512 100 128 --arch 90
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.pop("TRITON_INTERPRET", None)  # compiled kernels, not the interpreter

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODULE_PATH = "text_recognizer/ctc/triton_ctc.py"
TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
REGISTERS_PER_SM, MAX_WARPS_PER_SM, MAX_PROGRAMS_PER_SM = 65536, 64, 32

# Pointer and scalar argument types (int64 lengths and targets, float32 logits).
POINTERS = dict(logits_ptr="*fp32", emit_ptr="*fp32", lse_ptr="*fp32", state_ptr="*fp32",
                scratch_ptr="*fp32", nll_ptr="*fp32", out_ptr="*fp32", grad_out_ptr="*fp32",
                grad_ptr="*fp32", targets_ptr="*i64", input_len_ptr="*i64", target_len_ptr="*i64")


def load_module(rev: str | None):
    """``triton_ctc`` of the working tree, or of git revision ``rev`` (loaded from a temp file)."""
    if rev is None:
        source = (REPO / MODULE_PATH).read_text()
    else:
        source = subprocess.run(["git", "show", f"{rev}:{MODULE_PATH}"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="ctc_static_"))
    path = folder / f"triton_ctc_{rev or 'worktree'}.py"
    path.write_text(source)  # @triton.jit needs the source in a real file
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def kernel_config(module, shift: str, recursion_warps: int | None):
    """The module's ``KernelConfig`` for these choices; ``None`` for revisions before it existed."""
    if not hasattr(module, "KernelConfig"):
        return None
    return module.KernelConfig(shift=shift, recursion_warps=recursion_warps)


def configs(module, classes: int, length: int, config=None) -> dict:
    """Launch configurations; revisions before ``kernel_configs`` computed them inline like this."""
    if config is not None:
        return module.kernel_configs(classes, length, config)
    if hasattr(module, "kernel_configs"):
        return module.kernel_configs(classes, length)
    p2 = triton.next_power_of_2
    block = p2(length + 1)
    emit_c = min(p2(classes), 1024)
    emit_t = max(1, min(32, 4096 // emit_c))
    grad_c = min(p2(classes), 128)
    return {
        "emit": dict(BLOCK_T=emit_t, BLOCK_C=emit_c, BLOCK_K=min(p2(length + 1), max(16, 4096 // emit_t)),
                     num_warps=4),
        "recursion": dict(BLOCK=block, num_warps=max(1, min(8, block // 64))),
        "grad": dict(BLOCK_C=grad_c, BLOCK_L=min(block, max(16, 4096 // grad_c)), num_warps=4),
    }


def compile_kernel(fn, constexprs: dict, num_warps: int, arch: int):
    """(registers, spill stack bytes, shared bytes, SASS lines) of ``fn`` compiled for ``sm_arch``."""
    names = fn.arg_names
    signature = {n: "constexpr" if n in constexprs else POINTERS.get(n, "i64" if "stride" in n else "i32")
                 for n in names}
    source = ASTSource(fn, signature, constexprs={(names.index(k),): v for k, v in constexprs.items()})
    kernel = triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        usage = subprocess.run([TOOLS / "cuobjdump", "--dump-resource-usage", cubin.name],
                               capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([TOOLS / "nvdisasm", "-c", cubin.name], capture_output=True, text=True,
                              check=True).stdout
    fields = dict(re.findall(r"(REG|STACK|SHARED):(\d+)", usage))
    return int(fields["REG"]), int(fields["STACK"]), int(fields["SHARED"]), sass.splitlines()


def instructions(sass: list[str]) -> list[tuple[int, str]]:
    """(address, text) of every SASS instruction, plus ('label', name) markers."""
    out = []
    for line in sass:
        label = re.match(r"(\.L_x_\d+):", line)
        if label:
            out.append((-1, label.group(1)))
            continue
        found = re.search(r"/\*([0-9a-f]{4,})\*/\s*(.*?);", line)
        if found:
            out.append((int(found.group(1), 16), found.group(2)))
    return out


def loops(sass: list[str]) -> list[int]:
    """Instruction counts of the innermost loops (a backward branch to a label), in code order."""
    items = instructions(sass)
    label_at, pending = {}, []
    for address, text in items:
        if address < 0:
            pending.append(text)
        else:
            for name in pending:
                label_at[name] = address
            pending = []
    spans = []
    for address, text in items:
        target = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", text)
        if address >= 0 and target and label_at.get(target.group(1), address + 1) < address:
            spans.append((label_at[target.group(1)], address))
    innermost = [(a, b) for a, b in spans if not any((a, b) != (c, d) and a <= c and d <= b for c, d in spans)]
    return [(b - a) // 16 + 1 for a, b in sorted(innermost)]


def resident_programs(registers: int, shared: int, num_warps: int) -> int:
    """Programs one multiprocessor holds at once (registers allocated in units of 8 per thread)."""
    per_program = ((registers + 7) // 8 * 8) * 32 * num_warps
    limits = [REGISTERS_PER_SM // per_program, MAX_WARPS_PER_SM // num_warps, MAX_PROGRAMS_PER_SM]
    if shared:
        limits.append(228 * 1024 // shared)
    return max(0, min(limits))


def analyse(module, shape, arch: int, config=None) -> dict:
    """Registers, residency and loop instructions of the three kernels (``config``: a KernelConfig)."""
    batch, frames, classes, length = shape
    cfg = configs(module, classes, length, config)
    scratch = config is not None and config.shift == "scratch"
    flags = dict(CONCAT=False, BLOCK_B=min(1024, triton.next_power_of_2(batch)))
    result = {}

    emit = dict(cfg["emit"])
    warps = emit.pop("num_warps")
    regs, stack, shared, _ = compile_kernel(module._emit_kernel, {**emit, **flags}, warps, arch)
    result["emit"] = dict(config=cfg["emit"], registers=regs, spill_bytes=stack,
                          programs_per_sm=resident_programs(regs, shared, warps))

    rec = dict(cfg["recursion"])
    warps = rec.pop("num_warps")
    regs, stack, shared, sass = compile_kernel(
        module._recursion_kernel, {**rec, **flags, "STORE": True, "SCRATCH": scratch, "ZERO_INF": False},
        warps, arch)
    frame_loops = [size for size in loops(sass) if size > 50]  # the beta and alpha loops (4 frames each)
    result["recursion"] = dict(config=cfg["recursion"], registers=regs, spill_bytes=stack,
                               programs_per_sm=resident_programs(regs, shared, warps),
                               instructions_per_warp_per_frame=max(frame_loops) / 4 if frame_loops else None)

    grad = dict(cfg["grad"])
    warps = grad.pop("num_warps")
    regs, stack, shared, sass = compile_kernel(module._grad_kernel, {**grad, **flags, "MEAN": True}, warps, arch)
    sizes = [size for size in loops(sass) if size > 20]  # in code order
    straight = len([1 for address, _ in instructions(sass) if address >= 0])
    if "CHAR_BLOCK" in grad:  # one loop, over class chunks
        trips = [-(-classes // grad["BLOCK_C"])]
    else:  # legacy: a loop over blank-state chunks, then (class chunk x label chunk) tiles
        trips = [-(-(length + 1) // grad["BLOCK_L"]),
                 -(-classes // grad["BLOCK_C"]) * -(-length // grad["BLOCK_L"])]
    if len(sizes) != len(trips):
        raise RuntimeError(f"expected {len(trips)} loops in the gradient kernel, found {sizes}")
    dynamic = straight + sum(size * (trip - 1) for size, trip in zip(sizes, trips))
    result["grad"] = dict(config=cfg["grad"], registers=regs, spill_bytes=stack,
                          programs_per_sm=resident_programs(regs, shared, warps),
                          warp_instructions_per_frame=dynamic * warps)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=4, default=[128, 256, 80, 64], metavar=("B", "T", "C", "L"))
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability (90: H100/H200)")
    parser.add_argument("--rev", help="git revision whose kernels are the baseline")
    parser.add_argument("--shift", choices=("gather", "scratch"), default="gather",
                        help="KernelConfig.shift of the kernels analysed (the baseline's too, if it has one)")
    parser.add_argument("--recursion-warps", type=int, choices=(1, 2, 4, 8, 16), default=None,
                        help="KernelConfig.recursion_warps (default: the shipped rule, BLOCK / 32)")
    args = parser.parse_args(argv)
    module = load_module(None)
    current = analyse(module, args.shape, args.arch, kernel_config(module, args.shift, args.recursion_warps))
    baseline = None
    if args.rev:
        old = load_module(args.rev)
        baseline = analyse(old, args.shape, args.arch, kernel_config(old, args.shift, args.recursion_warps))
    print(f"Fused CTC kernels compiled for sm_{args.arch}, shape (B, T, C, L) = {tuple(args.shape)}; "
          f"triton {triton.__version__}")
    for kernel, stats in current.items():
        print(f"\n{kernel}: {stats['config']}")
        for key, value in stats.items():
            if key == "config":
                continue
            line = f"  {key:<34} {value!s:>10}"
            if baseline:
                old = baseline[kernel][key]
                line += f"   baseline {old!s:>10}"
                if isinstance(value, (int, float)) and isinstance(old, (int, float)) and value:
                    line += f"   baseline / current {old / value:5.2f}"
            print(line)
        if baseline:
            print(f"  baseline config: {baseline[kernel]['config']}")
    return current, baseline


if __name__ == "__main__":
    main()
