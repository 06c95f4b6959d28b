"""Checkpoints: a run resumed from ``last.pt`` continues exactly as it would have gone on, and a resume
without a checkpoint names the file it looked for."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from training.loop.trainer import fit

from ..helpers import StopAtStep, tiny_config


# mid-epoch and exactly at an epoch end; Adam's moments and step counts must survive a resume too
@pytest.mark.parametrize("stop_at, optimizer", [(3, "rmsprop"), (4, "rmsprop"), (3, "adam")])
def test_resume_continues_exactly(tmp_path, stop_at, optimizer):
    def config(run_dir, resume=False):
        return tiny_config(
            run_dir,
            model={"dropout": 0.2},
            optim={"max_epochs": 2, "lr_schedule": "cosine", "warmup_steps": 2, "optimizer": optimizer},
            run={"resume": resume, "seed": 3},
        )

    straight = fit(config(tmp_path / "a"))
    interrupted = fit(config(tmp_path / "b"), loggers=[StopAtStep(stop_at)])
    assert interrupted["stop_reason"] == "interrupted" and interrupted["steps"] == stop_at
    resumed = fit(config(tmp_path / "b", resume=True))
    assert resumed["steps"] == straight["steps"] == 8
    a = load_checkpoint(tmp_path / "a" / "last.pt").model_state
    b = load_checkpoint(tmp_path / "b" / "last.pt").model_state
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert resumed["best_val_cer"] == straight["best_val_cer"]


def test_resume_without_a_checkpoint_names_the_file(tmp_path):
    with pytest.raises(ValueError, match="last.pt"):
        fit(tiny_config(tmp_path / "missing", run={"resume": True}))
