"""InterCTC and stochastic depth in the training loop: loss, per-layer metrics, config, resume."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.data.lines import collate_lines
from text_recognizer.models import build_model
from training.experiments.wandb_logger import WandbLogger
from training.loop.config import ExperimentConfig, InterCTCConfig, add_config_arguments, config_from_args
from training.loop.loggers import Logger
from training.loop.objective import compute_loss
from training.loop.trainer import fit

from ..helpers import TINY_FLAGS, StopAtStep, tiny_config

BOTH = {"model": {"stochastic_depth": 0.3, "conv_blocks": 2}, "interctc": {"layers": (1, 2), "weights": (0.2, 0.1)}}


def both_config(run_dir, **overrides):
    overrides["data"] = {"synthetic_train_lines": 8, "synthetic_val_lines": 4, **overrides.get("data", {})}
    config = tiny_config(run_dir, model=BOTH["model"], **overrides)
    return ExperimentConfig(
        model=config.model,
        data=config.data,
        optim=config.optim,
        run=config.run,
        interctc=InterCTCConfig(**BOTH["interctc"]),
    )


class Recorder(Logger):
    def __init__(self):
        self.train, self.val, self.info = [], [], None

    def start(self, config, run_dir, model_info):
        self.info = model_info

    def log_train(self, step, metrics):
        self.train.append(metrics)

    def log_val(self, epoch, step, metrics, samples):
        self.val.append(metrics)


def test_short_training_run_with_both_on(tmp_path, capsys):
    recorder = Recorder()
    summary = fit(both_config(tmp_path / "run", optim={"max_epochs": 2}), loggers=[recorder])
    assert summary["steps"] == 4 and summary["best_val_cer"] is not None
    out = capsys.readouterr().out
    assert "stochastic depth (linear, max 0.3, from layer 1)" in out and "InterCTC" in out
    # per-layer training losses every step, per-layer validation loss and CER every epoch
    for metrics in recorder.train:
        assert {"interctc_conv1_loss", "interctc_conv2_loss", "final_loss"} <= set(metrics)
        assert metrics["loss"] == pytest.approx(
            0.7 * metrics["final_loss"] + 0.2 * metrics["interctc_conv1_loss"] + 0.1 * metrics["interctc_conv2_loss"],
            rel=1e-4,
        )
    for metrics in recorder.val:
        for name in ("conv1", "conv2"):
            assert 0.0 <= metrics[f"val_interctc_{name}_cer"] and metrics[f"val_interctc_{name}_loss"] > 0
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert "val_interctc_conv2_cer" in [r for r in records if r["kind"] == "val"][-1]
    # probabilities printed and saved; the checkpoint carries the model settings
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["stochastic_depth_probs"] == pytest.approx({"conv1": 0.1, "conv2": 0.2, "lstm1": 0.3})
    assert saved["interctc"] == {"layers": [1, 2], "weights": [0.2, 0.1]}
    assert recorder.info["stochastic_depth_probs"] == saved["stochastic_depth_probs"]
    bundle = load_checkpoint(tmp_path / "run" / "best.pt")
    assert bundle.model_config.stochastic_depth == 0.3
    assert ExperimentConfig.from_dict(bundle.provenance.recipe).interctc.layers == (1, 2)


def test_off_by_default_logs_nothing_extra(tmp_path):
    recorder = Recorder()
    fit(
        tiny_config(
            tmp_path / "run", data={"synthetic_train_lines": 8, "synthetic_val_lines": 4}, optim={"max_steps": 1}
        ),
        loggers=[recorder],
    )
    assert not any("interctc" in k for m in recorder.train + recorder.val for k in m)
    assert "stochastic_depth_probs" not in json.loads((tmp_path / "run" / "config.json").read_text())


def test_compute_loss_composes_the_total():
    config = tiny_config("unused", model={"conv_blocks": 2})
    torch.manual_seed(0)
    model = build_model(config.model).eval()  # eval: no dropout, so the two forwards agree
    codec = Codec()
    from text_recognizer.data.lines import LineSample

    samples = [LineSample(torch.rand(1, 32, 120), torch.tensor(codec.encode(text)), text) for text in ("ab", "hello")]
    batch = collate_lines(samples)
    interctc = InterCTC([1, 3], [0.2, 0.3])
    with torch.no_grad():
        plain, _ = compute_loss(model, batch, "ctc", "torch")
        total, info = compute_loss(model, batch, "ctc", "torch", interctc)
    assert info["final_loss"] == pytest.approx(float(plain))
    assert float(total) == pytest.approx(
        0.5 * float(plain) + 0.2 * info["interctc"][1] + 0.3 * info["interctc"][3], rel=1e-5
    )


def test_resume_is_exact_with_stochastic_depth(tmp_path):
    straight = fit(both_config(tmp_path / "a", optim={"max_epochs": 2}, run={"seed": 4}))
    fit(both_config(tmp_path / "b", optim={"max_epochs": 2}, run={"seed": 4}), loggers=[StopAtStep(3)])
    resumed = fit(both_config(tmp_path / "b", optim={"max_epochs": 2}, run={"seed": 4, "resume": True}))
    assert resumed["steps"] == straight["steps"] == 4
    a = load_checkpoint(tmp_path / "a" / "last.pt").model_state
    b = load_checkpoint(tmp_path / "b" / "last.pt").model_state
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_flags_and_config_errors():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    args = parser.parse_args(
        [
            *TINY_FLAGS,
            "--conv-blocks",
            "2",
            "--interctc-layers",
            "2",
            "--interctc-weights",
            "0.3",
            "--stochastic-depth",
            "0.2",
            "--stochastic-depth-mode",
            "uniform",
            "--stochastic-depth-start",
            "2",
        ]
    )
    config = config_from_args(args, Codec().num_classes)
    assert config.interctc == InterCTCConfig(layers=(2,), weights=(0.3,))
    assert config.model.stochastic_depth_probs() == [0.0, 0.2, 0.2]
    assert ExperimentConfig.from_dict(config.to_dict()) == config
    old = config.to_dict()
    del old["interctc"]
    assert ExperimentConfig.from_dict(old).interctc == InterCTCConfig()  # configs from before InterCTC
    with pytest.raises(ValueError, match=r"layers \[4\] do not exist: the encoder has 3 blocks"):
        config_from_args(
            parser.parse_args(
                [*TINY_FLAGS, "--conv-blocks", "2", "--interctc-layers", "4", "--interctc-weights", "0.3"]
            ),
            80,
        )
    with pytest.raises(ValueError, match="one weight per layer"):
        config_from_args(
            parser.parse_args([*TINY_FLAGS, "--interctc-layers", "1", "2", "--interctc-weights", "0.3"]), 80
        )
    with pytest.raises(ValueError, match="needs --loss ctc"):
        config_from_args(
            parser.parse_args([*TINY_FLAGS, "--loss", "nll", "--interctc-layers", "1", "--interctc-weights", "0.3"]), 80
        )
    with pytest.raises(ValueError, match="stochastic_depth_start=4 is past the last"):
        config_from_args(
            parser.parse_args([*TINY_FLAGS, "--stochastic-depth", "0.1", "--stochastic-depth-start", "4"]), 80
        )


def test_wandb_logger_receives_the_per_layer_metrics():
    class FakeRun:
        def __init__(self):
            self.logged = []

        def log(self, record, step=None):
            self.logged.append(record)

    logger = WandbLogger(num_samples=0)
    logger.run = FakeRun()
    logger.log_train(1, {"epoch": 1, "loss": 2.0, "interctc_conv1_loss": 3.0})
    logger.log_val(
        1,
        1,
        {"val_loss": 1.0, "val_cer": 0.5, "val_n": 2, "val_interctc_conv1_loss": 1.5, "val_interctc_conv1_cer": 0.7},
        [],
    )
    train, val = logger.run.logged
    assert train["train/interctc_conv1_loss"] == 3.0
    assert val["val/interctc_conv1_loss"] == 1.5 and val["val/interctc_conv1_cer"] == 0.7
