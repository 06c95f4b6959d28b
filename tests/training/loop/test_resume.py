"""``--resume`` keeps the run's own configuration: flags it is not given come from the saved run, a
documented few may change (and are recorded), any other difference is refused, and ``config.json``
is never rewritten. Runs made before the checkpoint bundle (format 1) resume too."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
import torch
from PIL import Image, ImageDraw

from text_recognizer.checkpoint import FORMAT_VERSION, load_checkpoint
from text_recognizer.codec import Codec
from training.loop.config import RESUME_OVERRIDE_FLAGS, config_from_args
from training.loop.loggers import Logger
from training.loop.run_files import OVERRIDES_FILE
from training.loop.run_state import TrainingError
from training.loop.trainer import fit
from training.run_experiment import build_parser, main

from ..helpers import TINY_FLAGS, StopAtStep, tiny_config

V1_RUN = Path(__file__).parents[2] / "fixtures" / "checkpoints" / "v1_run"
MAX_EPOCHS_2_TO_3 = {"field": "optim.max_epochs", "saved": 2, "given": 3}
TEXTS = ["a cat sat", "on the mat", "red fox", "big dog ran", "sun and sea", "one two", "hello there", "we go home"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A tiny dataset folder: eight rendered lines and their labels.tsv."""
    root = tmp_path_factory.mktemp("lines")
    rows = ["file\ttext"]
    for i, text in enumerate(TEXTS):
        image = Image.new("L", (12 * len(text) + 16, 40), 255)
        ImageDraw.Draw(image).text((8, 12), text, fill=0)
        image.save(root / f"line_{i}.png")
        rows.append(f"line_{i}.png\t{text}")
    (root / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def _flags(folder: Path, run_dir: Path) -> list[str]:
    return [
        *TINY_FLAGS,
        "--data",
        str(folder),
        "--val-data",
        str(folder),
        "--batch-size",
        "4",
        "--max-epochs",
        "2",
        "--lr-schedule",
        "cosine",
        "--warmup-steps",
        "1",
        "--checkpoint-every",
        "0",
        "--device",
        "cpu",
        "--threads",  # fixed, as in tiny_config: auto follows the load, and another count breaks bit-exactness
        "2",
        "--run-dir",
        str(run_dir),
    ]


def _interrupted_run(folder: Path, run_dir: Path, stop_at: int = 3) -> dict:
    """A folder-data run stopped (like Ctrl-C) after ``stop_at`` steps of its planned 4."""
    config = config_from_args(build_parser().parse_args(_flags(folder, run_dir)), Codec().num_classes)
    summary = fit(config, loggers=[StopAtStep(stop_at)])
    assert summary["stop_reason"] == "interrupted" and summary["steps"] == stop_at
    return summary


def _history(run_dir: Path) -> list[dict]:
    path = run_dir / OVERRIDES_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_resume_without_flags_continues_the_saved_folder_run(folder, tmp_path, capsys):
    assert main(_flags(folder, tmp_path / "straight")) == 0
    _interrupted_run(folder, tmp_path / "run")
    config_json = (tmp_path / "run" / "config.json").read_bytes()

    assert main(["--resume", "--run-dir", str(tmp_path / "run")]) == 0  # no --data: the run's own folder
    assert "resumed" in capsys.readouterr().out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["steps"] == 4 and summary["epochs"] == 2 and summary["stop_reason"] == "reached --max-epochs 2"
    assert str(folder) in json.dumps(summary["data_checks"])  # the folder's feasibility report, not synthetic data
    resumed, straight = (
        load_checkpoint(tmp_path / "run" / "last.pt"),
        load_checkpoint(tmp_path / "straight" / "last.pt"),
    )
    assert str(folder) in resumed.provenance.data and resumed.provenance.recipe["data"]["data"] == [str(folder)]
    for name, value in straight.model_state.items():  # the same run as one that was never interrupted
        assert torch.equal(resumed.model_state[name], value), name
    assert (tmp_path / "run" / "config.json").read_bytes() == config_json
    [record] = _history(tmp_path / "run")
    assert record["step"] == 3 and record["overrides"] == {}


def test_a_forbidden_override_is_refused_with_flag_and_values(folder, tmp_path, capsys):
    _interrupted_run(folder, tmp_path / "run")
    config_json = (tmp_path / "run" / "config.json").read_bytes()
    last = (tmp_path / "run" / "last.pt").read_bytes()

    assert main(["--resume", "--run-dir", str(tmp_path / "run"), "--batch-size", "8", "--data", "synthetic"]) == 2
    error = capsys.readouterr().err
    assert "--batch-size was 4, given 8" in error and f"--data was ['{folder}'], given ['synthetic']" in error
    assert all(flag in error for flag in RESUME_OVERRIDE_FLAGS)  # says what may change
    assert (tmp_path / "run" / "config.json").read_bytes() == config_json
    assert (tmp_path / "run" / "last.pt").read_bytes() == last and _history(tmp_path / "run") == []


def test_the_library_refuses_a_different_config_too(tmp_path):
    fit(tiny_config(tmp_path / "run", optim={"max_steps": 1}))
    with pytest.raises(TrainingError, match="--lr was 0.001, given 0.01"):
        fit(tiny_config(tmp_path / "run", optim={"max_steps": 2, "lr": 1e-2}, run={"resume": True}))


def test_an_allowed_override_is_applied_recorded_and_kept_by_later_resumes(folder, tmp_path):
    run = tmp_path / "run"
    _interrupted_run(folder, run)
    config_json = (run / "config.json").read_bytes()

    assert main(["--resume", "--run-dir", str(run), "--max-epochs", "3", "--progress", "false"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["epochs"] == 3 and summary["steps"] == 6 and summary["stop_reason"] == "reached --max-epochs 3"
    assert load_checkpoint(run / "last.pt").provenance.recipe["optim"]["max_epochs"] == 3
    [record] = _history(run)
    assert record["overrides"] == {"--max-epochs": MAX_EPOCHS_2_TO_3}  # --progress false is no change

    # a second resume without flags keeps the new budget: nothing is left to do, the best model stays
    best = (run / "best.pt").read_bytes()
    assert main(["--resume", "--run-dir", str(run)]) == 0
    again = json.loads((run / "summary.json").read_text())
    assert again["steps"] == 6 and again["stop_reason"] == "reached --max-epochs 3"
    assert again["best_val_cer"] == summary["best_val_cer"] and again["final_val_cer"] == summary["final_val_cer"]
    assert (run / "best.pt").read_bytes() == best
    assert [r["overrides"] for r in _history(run)] == [{"--max-epochs": MAX_EPOCHS_2_TO_3}, {}]
    assert (run / "config.json").read_bytes() == config_json


def test_time_budget_and_counters_add_up_over_resumes(folder, tmp_path):
    run = tmp_path / "run"
    _interrupted_run(folder, run, stop_at=1)
    first = load_checkpoint(run / "last.pt").train_state["counters"]
    assert main(["--resume", "--run-dir", str(run), "--max-steps", "2"]) == 0
    second = load_checkpoint(run / "last.pt").train_state["counters"]
    assert second["step"] == 2 and second["elapsed"] > first["elapsed"] > 0
    assert second["lines_seen"] == first["lines_seen"] + 4


def test_resume_needs_a_run_directory(capsys):
    assert main(["--resume"]) == 2
    assert "--resume needs the run to continue: --run-dir" in capsys.readouterr().err


def test_a_format_1_run_resumes_and_keeps_its_config_json(tmp_path):
    run = tmp_path / "v1_run"
    shutil.copytree(V1_RUN, run)
    config_json = (run / "config.json").read_bytes()
    assert main(["--resume", "--run-dir", str(run), "--max-epochs", "7", "--max-steps", "194"]) == 0
    bundle = load_checkpoint(run / "last.pt")
    assert bundle.format_version == FORMAT_VERSION and bundle.train_state["counters"]["step"] == 194
    assert bundle.provenance.recipe["model"]["kind"] == "line_cnn" and bundle.decoding.output_kind == "ctc"
    assert (run / "config.json").read_bytes() == config_json
    assert _history(run)[0]["overrides"] == {
        "--max-epochs": {"field": "optim.max_epochs", "saved": 6, "given": 7},
        "--max-steps": {"field": "optim.max_steps", "saved": 0, "given": 194},
    }


class SigtermAtStep(Logger):
    """Sends this process SIGTERM after a given step, as a scheduler or ``timeout`` would."""

    def __init__(self, step: int):
        self.step = step

    def log_train(self, step, metrics):
        if step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def test_sigterm_saves_last_and_the_run_resumes(folder, tmp_path):
    run_dir = tmp_path / "run"
    config = config_from_args(build_parser().parse_args(_flags(folder, run_dir)), Codec().num_classes)
    summary = fit(config, loggers=[SigtermAtStep(2)])
    assert summary["stop_reason"] == "interrupted" and summary["steps"] == 2
    assert load_checkpoint(run_dir / "last.pt").train_state["counters"]["step"] == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is removed after training
    assert main([*_flags(folder, run_dir)[-2:], "--resume"]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 4
