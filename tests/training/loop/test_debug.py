"""``python -m training.loop.debug``: replay with --trace names the module that went non-finite; crosscheck
compares the CTC implementations on a dumped batch (Triton through its interpreter in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint
from training.loop.debug import crosscheck, main, replay
from training.loop.trainer import fit

from ..helpers import tiny_config
from .test_guard import TransientFault

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A two-step run whose second step is bad (NaN in window_cnn.project): one dump, a clean last.pt."""
    run_dir = tmp_path_factory.mktemp("debug") / "run"
    config = tiny_config(run_dir, data={"synthetic_train_lines": 4, "synthetic_val_lines": 4}, optim={"max_epochs": 3})
    fit(config, loggers=[TransientFault(at=1, lasting=1)])
    dumps = sorted((run_dir / "bad_steps").iterdir())
    assert [d.name for d in dumps] == ["step_0000002.pt"]
    return run_dir, dumps[0]


def _corrupted_checkpoint(run_dir: Path, parameter: str, value: float) -> Path:
    """last.pt (clean weights) with one element of ``parameter`` set to ``value``."""
    bundle = load_checkpoint(run_dir / "last.pt")
    state = dict(bundle.model_state)
    state[parameter] = state[parameter].clone()
    state[parameter].view(-1)[0] = value
    path = run_dir / f"corrupt_{parameter}.pt"
    save_checkpoint(bundle.replace(model_state=state, train_state=None), path)
    return path


@pytest.mark.parametrize(
    "parameter, module",
    [
        ("window_cnn.conv.4.weight", "window_cnn.conv.4"),
        ("head.weight", "head"),
    ],
)
def test_trace_names_the_first_module_with_a_non_finite_output(run, parameter, module):
    run_dir, dump = run
    result = replay(dump, checkpoint=str(_corrupted_checkpoint(run_dir, parameter, float("inf"))), trace=True)
    assert result.reproduced and result.step_is_bad  # the dumped step had a non-finite loss; so does this one
    assert result.first_nonfinite_module == module and result.first_module_input_finite


def test_trace_names_the_first_non_finite_gradient(run):
    run_dir, dump = run
    # An infinite LSTM input weight saturates the gates: every forward output stays finite, the loss
    # too, but the LSTM's backward sends non-finite gradients to everything before it. In backward
    # order the first parameter to receive one is the LayerNorm right in front of the LSTM.
    result = replay(
        dump,
        checkpoint=str(_corrupted_checkpoint(run_dir, "encoder.blocks.lstm1.forward_lstm.weight_ih_l0", float("inf"))),
        trace=True,
    )
    assert result.first_nonfinite_module == "" and torch.isfinite(torch.tensor(result.loss))
    assert result.step_is_bad and not result.reproduced  # a different failure than the dumped one (NaN loss)
    assert result.first_nonfinite_grad == "encoder.blocks.lstm1.norm.weight"
    assert "encoder.blocks.lstm1.norm.weight" in result.nonfinite_grads and "head.weight" not in result.nonfinite_grads
    clean = replay(dump, checkpoint=str(run_dir / "last.pt"), trace=True)
    assert clean.first_nonfinite_grad == "" and not clean.step_is_bad and clean.grad_norm > 0


def test_crosscheck_in_process(run, capsys, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # PyTorch only here; the interpreter has its own test
    run_dir, dump = run
    clean = crosscheck(dump, checkpoint=str(run_dir / "last.pt"))
    assert clean.logits_finite and clean.used == 4
    # float32 against float64: the gradient error depends on the CPU's float32 kernels (1.0e-4 on an AMD EPYC
    # box, 2026-12-02, where earlier machines stayed below it); a loss bug shows up as 1e-2 and more (the verdict)
    assert (
        clean.results["torch_float32"]["max_loss_diff"] < 1e-3
        and clean.results["torch_float32"]["max_grad_diff"] < 1e-3
    )
    assert "agree" in clean.verdict()
    broken = crosscheck(dump)  # the dump's own model: NaN logits
    assert not broken.logits_finite and "not a loss bug" in broken.verdict()
    assert main(["crosscheck", str(dump), "--checkpoint", str(run_dir / "last.pt")]) == 0
    out = capsys.readouterr().out
    assert "reference_float64" in out and "torch_float32" in out and "verdict:" in out


def test_crosscheck_with_the_triton_interpreter(run):
    run_dir, dump = run
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore")
    result = subprocess.run(
        [sys.executable, "-m", "training.loop.debug", "crosscheck", str(dump),
         "--checkpoint", str(run_dir / "last.pt")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("triton_interpreter"))
    assert "unavailable" not in row, row
    loss_diff, grad_diff = (float(x) for x in row.split()[2:4])
    # float32 against float64, as for PyTorch above: 1.1e-4 on an AVX2-only AMD EPYC (2026-12-05), so the
    # same 1e-3 bound; a loss bug shows up as 1e-2 and more (the verdict's line)
    assert loss_diff < 1e-3 and grad_diff < 1e-3, row
    assert "all implementations agree" in result.stdout


def test_replay_refuses_a_plain_checkpoint(run, capsys):
    run_dir, _ = run
    assert main(["replay", str(run_dir / "last.pt")]) == 1
    assert "not a bad-step dump" in capsys.readouterr().err
