"""``training/loop/device.py``: ``--device`` and ``--precision`` checks, and the bfloat16 advice for CPUs."""

from __future__ import annotations

import pytest
import torch

from training.loop.device import autocast, check_precision, cpu_has_bf16, precision_advice, resolve_device


def test_bf16_advice_only_for_a_cpu_that_would_emulate_it():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    advice = precision_advice("bf16", cpu, has_bf16=False)
    assert advice is not None and "--precision 32" in advice
    assert precision_advice("bf16", cpu, has_bf16=True) is None
    assert precision_advice("32", cpu, has_bf16=False) is None
    assert precision_advice("bf16", cuda, has_bf16=False) is None  # GPUs are not this function's business
    assert isinstance(cpu_has_bf16(), bool)


def test_16_mixed_is_refused_off_cuda_with_the_alternatives():
    with pytest.raises(ValueError, match="--precision 16-mixed needs a CUDA device.*--precision 32 .*bf16"):
        check_precision("16-mixed", torch.device("cpu"))
    check_precision("bf16", torch.device("cpu"))  # allowed (only advised against where it is emulated)
    check_precision("32", torch.device("cpu"))


def test_auto_device_and_a_missing_gpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="--device cuda: CUDA is not available"):
            resolve_device("cuda")


def test_autocast_is_a_no_op_in_float32_and_bfloat16_under_bf16():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with autocast("32", torch.device("cpu")):
        assert (a @ b).dtype == torch.float32
    with autocast("bf16", torch.device("cpu")):
        assert (a @ b).dtype == torch.bfloat16
