"""The training loop: it learns, validates when asked, stops on its budgets, and writes its run directory."""

from __future__ import annotations

import json

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from training.loop.trainer import fit

from ..helpers import StopAtStep, tiny_config


def test_overfits_one_batch_to_cer_zero(tmp_path):
    config = tiny_config(
        tmp_path / "run",
        data={"synthetic_train_lines": 4},
        optim={"lr": 3e-3, "max_epochs": 220},
        run={"overfit_batches": 1},
    )
    summary = fit(config)
    assert summary["best_val_cer"] == 0.0, summary


def test_run_directory_layout_and_plain_checkpoints(tmp_path):
    summary = fit(tiny_config(tmp_path / "run", optim={"max_epochs": 2}))
    run = tmp_path / "run"
    for name in ("config.json", "metrics.jsonl", "last.pt", "best.pt", "summary.json"):
        assert (run / name).is_file(), name
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records if r["kind"] == "val"] == [1, 2]
    assert sum(r["kind"] == "train" for r in records) == summary["steps"] == 8
    # weights_only=True must work: checkpoints hold plain types only
    payload = torch.load(run / "best.pt", weights_only=True)
    assert payload["model_config"]["height"] == 32 and "charset" in payload["codec"]
    assert json.loads((run / "summary.json").read_text())["best_val_cer"] == summary["best_val_cer"]


def test_max_steps_stops_mid_epoch_and_validates(tmp_path):
    summary = fit(tiny_config(tmp_path / "run", optim={"max_steps": 3, "max_epochs": 5}))
    assert summary["steps"] == 3 and "max-steps" in summary["stop_reason"]
    assert summary["final_val_cer"] is not None


def test_nll_baseline_trains(tmp_path):
    summary = fit(tiny_config(tmp_path / "run", optim={"max_steps": 2}, run={"loss": "nll"}))
    assert summary["steps"] == 2
    assert load_checkpoint(tmp_path / "run" / "best.pt").decoding.output_kind == "per_window"


def test_val_every_validates_every_nth_epoch_and_at_the_end(tmp_path):
    summary = fit(tiny_config(tmp_path / "run", optim={"max_epochs": 5}, run={"val_every": 2}))
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records if r["kind"] == "val"] == [2, 4, 5]
    assert summary["epochs"] == 5 and summary["final_val_cer"] is not None
    assert load_checkpoint(tmp_path / "run" / "last.pt").provenance.epoch == 5


def test_val_every_resumes_after_an_unvalidated_epoch(tmp_path):
    config = tiny_config(tmp_path / "run", optim={"max_epochs": 3}, run={"val_every": 3})
    interrupted = fit(config, loggers=[StopAtStep(4)])  # stops at the end of epoch 1, which is not validated
    assert interrupted["stop_reason"] == "interrupted"
    resumed = fit(tiny_config(tmp_path / "run", optim={"max_epochs": 3}, run={"val_every": 3, "resume": True}))
    assert resumed["epochs"] == 3 and resumed["best_epoch"] == 3


def test_val_every_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="--val-every"):
        tiny_config(tmp_path / "run", run={"val_every": 0})


def test_cosine_floor_must_be_a_share(tmp_path):
    with pytest.raises(ValueError, match="--cosine-floor must be a share of --lr in \\[0, 1\\], got 1.5"):
        tiny_config(tmp_path, optim={"cosine_floor": 1.5})
