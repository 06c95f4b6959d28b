"""CTC label smoothing in the training loop: the loss equation, logged terms, flags, config errors."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.data.lines import LineSample, collate_lines
from text_recognizer.models import build_model
from training.loop.config import ExperimentConfig, RunConfig, add_config_arguments, config_from_args
from training.loop.objective import compute_loss
from training.loop.trainer import fit

from ..helpers import TINY_FLAGS, tiny_config
from .test_interctc_training import Recorder


def small_batch():
    codec = Codec()
    torch.manual_seed(0)
    samples = [LineSample(torch.rand(1, 32, 120), torch.tensor(codec.encode(t)), t) for t in ("ab", "hello")]
    return collate_lines(samples)


def test_loss_is_the_weighted_sum_of_ctc_and_the_smoothing_term(tmp_path):
    config = tiny_config(tmp_path)
    torch.manual_seed(0)
    model = build_model(config.model).eval()
    batch = small_batch()
    with torch.no_grad():
        plain, plain_info = compute_loss(model, batch, "ctc", "torch")
        total, info = compute_loss(model, batch, "ctc", "torch", label_smoothing=0.2)
    assert "smoothing_loss" not in plain_info
    assert info["ctc_loss"] == pytest.approx(float(plain))
    assert info["smoothing_loss"] > 0
    assert float(total) == pytest.approx(0.8 * float(plain) + 0.2 * info["smoothing_loss"], rel=1e-5)


def test_training_run_logs_both_terms_and_keeps_val_loss_plain_ctc(tmp_path):
    recorder = Recorder()
    summary = fit(tiny_config(tmp_path / "run", run={"label_smoothing": 0.1}), loggers=[recorder])
    assert summary["steps"] > 0
    for metrics in recorder.train:
        assert {"ctc_loss", "smoothing_loss"} <= set(metrics)
        assert metrics["loss"] == pytest.approx(0.9 * metrics["ctc_loss"] + 0.1 * metrics["smoothing_loss"], rel=1e-4)
    assert "val_loss" in recorder.val[-1]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["run"]["label_smoothing"] == 0.1


def test_smoothing_keeps_every_class_probability_off_zero(tmp_path):
    """Overfitting one batch: without smoothing the rarest class's log-probability sinks far lower."""
    batch = small_batch()
    lowest = {}
    for eps in (0.0, 0.3):
        torch.manual_seed(0)
        model = build_model(tiny_config(tmp_path).model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(60):
            loss, _ = compute_loss(model, batch, "ctc", "torch", label_smoothing=eps)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            frames = model.output_lengths(batch.widths)
            log_probs = model(batch.images, batch.widths).log_softmax(-1)  # (B, T, C)
            lowest[eps] = min(float(log_probs[i, : frames[i]].min()) for i in range(len(frames)))
    assert lowest[0.3] > lowest[0.0] + 2.0


def test_flag_and_config_errors():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_args(parser.parse_args([*TINY_FLAGS, "--label-smoothing", "0.05"]), Codec().num_classes)
    assert config.run.label_smoothing == 0.05
    with pytest.raises(ValueError, match="label smoothing must be in"):
        RunConfig(label_smoothing=1.0)
    with pytest.raises(ValueError, match="--label-smoothing needs --loss ctc"):
        ExperimentConfig(run=RunConfig(loss="nll", label_smoothing=0.1))


def test_configs_saved_before_the_flag_load_with_smoothing_off():
    data = ExperimentConfig().to_dict()
    del data["run"]["label_smoothing"]
    assert ExperimentConfig.from_dict(data).run.label_smoothing == 0.0
