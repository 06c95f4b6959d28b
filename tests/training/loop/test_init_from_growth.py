"""``--init-from`` a shallower checkpoint: the new encoder blocks start as the identity, so the grown
model reads exactly as the checkpoint did before its first step (training/loop/checkpointing.py,
text_recognizer/models/growth.py)."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from training.loop.run_setup import set_up_run
from training.loop.run_state import TrainingError
from training.loop.trainer import fit

from ..helpers import tiny_config


@pytest.fixture(scope="module")
def shallow(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("shallow")
    fit(tiny_config(run_dir, optim={"max_steps": 2}))
    return run_dir / "best.pt"


def test_grown_model_starts_with_the_checkpoints_outputs(tmp_path, shallow, capsys):
    grown = set_up_run(tiny_config(tmp_path / "grown", model={"conv_blocks": 2, "lstm_layers": 3},
                                   run={"init_from": str(shallow)}))
    assert "new blocks start as the identity: conv2, lstm2, lstm3" in capsys.readouterr().out
    original = load_checkpoint(shallow).build_model().eval()
    model = grown.model.eval()
    assert model.config.lstm_layers == 3 and model.config.conv_blocks == 2
    torch.manual_seed(0)
    images = torch.rand(2, 1, 32, 90)
    widths = torch.tensor([90, 61])
    with torch.inference_mode():
        torch.testing.assert_close(model(images, widths), original(images, widths), atol=1e-6, rtol=1e-5)


def test_grown_model_trains_and_saves_its_own_architecture(tmp_path, shallow):
    run_dir = tmp_path / "grown"
    summary = fit(tiny_config(run_dir, model={"lstm_layers": 2}, optim={"max_steps": 2},
                              run={"init_from": str(shallow)}))
    assert summary["steps"] == 2
    bundle = load_checkpoint(run_dir / "best.pt")
    assert bundle.model_config.lstm_layers == 2
    grown_weights = bundle.model_state["encoder.blocks.lstm2.project.weight"]
    assert grown_weights.abs().sum() > 0  # the new block's zeroed output layer moved


def test_shrinking_or_other_changes_are_refused_with_the_reason(tmp_path, shallow):
    with pytest.raises(TrainingError, match=r"not shrink \(1 -> 0\)"):
        set_up_run(tiny_config(tmp_path / "a", model={"conv_blocks": 0}, run={"init_from": str(shallow)}))
    with pytest.raises(TrainingError, match="differs from this run's in .*lstm_hidden"):
        set_up_run(tiny_config(tmp_path / "b", model={"lstm_layers": 2, "lstm_hidden": 32},
                               run={"init_from": str(shallow)}))
