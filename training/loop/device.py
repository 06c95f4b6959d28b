"""Where a run computes and in which precision: ``--device`` and ``--precision``.

Why its own module: these are the run's hardware choices, checked before anything is written (a
refused ``--precision`` leaves no run directory behind) and used by the trainer and the training
benchmark alike, and the bfloat16 check is a fact about the CPU, not about the training loop.
"""

from __future__ import annotations

import contextlib

import torch


def check_precision(precision: str, device: torch.device) -> None:
    """Refuse a ``--precision`` the device cannot train in (``ValueError`` naming the alternatives)."""
    if precision == "16-mixed" and device.type != "cuda":
        raise ValueError(f"--precision 16-mixed needs a CUDA device (float16 autocast with a gradient scaler); "
                         f"on {device.type} use --precision 32 (the default) or bf16")


def cpu_has_bf16() -> bool:
    """Whether oneDNN has bfloat16 kernels for this CPU (x86: AVX512 and up, native with AVX512-BF16 or AMX);
    ``False`` where it cannot tell.

    Without them (an AVX2-only CPU) bfloat16 is emulated, and autocast makes training many times slower
    instead of faster (``benchmarks/RESULTS.md``, "bf16 on a CPU without bfloat16 hardware").
    """
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def precision_advice(precision: str, device: torch.device, has_bf16: bool | None = None) -> str | None:
    """A warning for ``--precision bf16`` on a CPU without bfloat16 hardware (``None`` when there is nothing to say).

    A warning, not a refusal: the run is correct either way, only slow, and the choice stays the user's.
    ``has_bf16`` defaults to :func:`cpu_has_bf16`.
    """
    if precision != "bf16" or device.type != "cpu":
        return None
    if cpu_has_bf16() if has_bf16 is None else has_bf16:
        return None
    return ("warning: --precision bf16 on a CPU without bfloat16 hardware (oneDNN has no bfloat16 kernels for it): "
            "autocast is emulated here and trains many times slower than --precision 32 (15x slower on a 2-core "
            "AVX2 CPU); use --precision 32")


def autocast(precision: str, device: torch.device):
    """The autocast context of ``--precision`` (a no-op for 32)."""
    if precision == "32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.type, dtype=dtype)


def resolve_device(name: str) -> torch.device:
    """``--device``: ``auto`` is CUDA when there is one, else the CPU; a CUDA device the machine lacks is refused."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: CUDA is not available on this machine")
    return device
