"""average_checkpoints.py: the mean of several checkpoints of one model, refused for different models."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from text_recognizer.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from text_recognizer.data.folder import read_labels
from text_recognizer.recognizer import LineRecognizer
from training.loop.trainer import fit
from training.release.average_checkpoints import average_checkpoints, main

from ..helpers import tiny_config

FIXTURES = Path(__file__).parents[2] / "fixtures"
V1_LAST = FIXTURES / "checkpoints" / "v1_run" / "last.pt"


def _shifted(tmp_path: Path, name: str, offset: float) -> Path:
    """A copy of the fixture checkpoint with every float tensor moved by ``offset``."""
    bundle = load_checkpoint(V1_LAST)
    state = {k: v + offset if v.is_floating_point() else v.clone() + 1 for k, v in bundle.model_state.items()}
    return save_checkpoint(bundle.replace(model_state=state), tmp_path / name)


def test_the_average_is_the_element_wise_mean_and_a_model_not_a_resume_point(tmp_path, capsys):
    first, second = _shifted(tmp_path, "a.pt", 0.0), _shifted(tmp_path, "b.pt", 0.5)
    out = tmp_path / "mean.pt"
    assert main([str(first), str(second), "--out", str(out)]) == 0
    assert "averaged 2 checkpoints" in capsys.readouterr().out
    a, b, mean = load_checkpoint(first), load_checkpoint(second), load_checkpoint(out)
    assert mean.train_state is None and mean.provenance.step is None and mean.provenance.val_cer is None
    assert mean.model_config == b.model_config and mean.codec == b.codec and mean.decoding == b.decoding
    for name, value in mean.model_state.items():
        if value.is_floating_point():
            torch.testing.assert_close(value, (a.model_state[name] + b.model_state[name]) / 2)
        else:  # batches tracked: from the last input, not a mean of counters
            assert torch.equal(value, b.model_state[name])
    paths = [r.path for r in read_labels(FIXTURES / "lines")]
    assert len(LineRecognizer(out).predict(paths)) == len(paths)


def test_one_checkpoint_averages_to_its_own_predictions(tmp_path):
    out = tmp_path / "same.pt"
    assert main([str(V1_LAST), "--out", str(out)]) == 0
    paths = [r.path for r in read_labels(FIXTURES / "lines")]
    assert LineRecognizer(out).predict(paths) == LineRecognizer(V1_LAST).predict(paths)


def test_checkpoints_of_different_models_are_refused_with_the_reason(tmp_path, capsys):
    bundle = load_checkpoint(V1_LAST)
    name = next(k for k, v in bundle.model_state.items() if v.is_floating_point() and v.dim() == 2)
    state = dict(bundle.model_state)
    state[name] = torch.zeros(state[name].shape[0] + 1, state[name].shape[1])
    wider = save_checkpoint(bundle.replace(model_state=state), tmp_path / "wider.pt")
    assert main([str(V1_LAST), str(wider), "--out", str(tmp_path / "x.pt")]) == 2
    assert name in capsys.readouterr().err and not (tmp_path / "x.pt").exists()
    renamed = bundle.replace(model_state={k + ".other": v for k, v in bundle.model_state.items()})
    with pytest.raises(CheckpointError, match="different parameters"):
        average_checkpoints([bundle, renamed])
    with pytest.raises(ValueError, match="at least one"):
        average_checkpoints([])


def test_ema_takes_the_runs_weight_average_from_last_pt_and_refuses_inputs_without_one(tmp_path, capsys):
    summary = fit(tiny_config(tmp_path / "run", optim={"max_epochs": 2, "ema_decay": 0.9}, run={"seed": 3}))
    assert summary["steps"] == 8
    last_path = tmp_path / "run" / "last.pt"
    last = load_checkpoint(last_path)
    average = last.train_state["ema_state"]["model_state"]
    out = tmp_path / "final_average.pt"
    assert main(["--ema", str(last_path), "--out", str(out)]) == 0
    final = load_checkpoint(out)
    assert final.train_state is None
    assert all(torch.equal(final.model_state[k], average[k]) for k in average)
    assert any(not torch.equal(final.model_state[k], last.model_state[k]) for k in average)  # not the raw weights
    # without --ema the same file gives its raw weights
    assert main([str(last_path), "--out", str(tmp_path / "raw.pt")]) == 0
    raw = load_checkpoint(tmp_path / "raw.pt").model_state
    assert all(torch.equal(raw[k], last.model_state[k]) for k in raw)
    capsys.readouterr()
    assert main(["--ema", str(last_path), str(V1_LAST), "--out", str(tmp_path / "mixed.pt")]) == 2
    assert "holds no weight average" in capsys.readouterr().err and not (tmp_path / "mixed.pt").exists()
