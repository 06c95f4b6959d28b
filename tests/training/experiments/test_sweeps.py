"""W&B sweep files: every parameter is a run_experiment.py flag, and a trial command expanded exactly
as ``wandb agent`` expands it (W&B's own helpers) trains for a couple of steps."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from text_recognizer.models.config import ModelConfig
from training.run_experiment import build_parser, main

pytest.importorskip("wandb")
from wandb.sdk.launch.sweeps import utils as sweep_utils  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
SWEEPS = sorted((REPO / "training" / "sweeps").glob("*.yaml"))
# Flags appended after the agent's arguments (argparse: the last value wins) to make a trial tiny;
# only for settings the sweep does not vary, so the sampled values are the ones exercised.
TINY = {
    "height": "32",
    "cnn-channels": ["8", "16"],
    "feature-dim": "32",
    "lstm-hidden": "32",
    "conv-blocks": "1",
    "lstm-layers": "1",
    "synthetic-train-lines": "8",
    "synthetic-val-lines": "4",
    "batch-size": "4",
    "max-steps": "2",
    "max-epochs": "1",
    "progress": "false",
    "checkpoint-every": "0",
}


def first_value(spec: dict):
    """A value the sweep could pick: the fixed value, the first listed value or the range's minimum."""
    if "value" in spec:
        return spec["value"]
    if "values" in spec:
        return spec["values"][0]
    value = spec["min"]
    return int(value) if spec.get("distribution", "").startswith("int") else value


def agent_command(sweep: dict, interpreter: str = "python") -> list[str]:
    """What ``wandb agent`` runs for one trial (see wandb_agent.Agent._command_run)."""
    command = {
        "args": {name: {"value": first_value(p)} for name, p in sweep["parameters"].items()},
        "program": sweep["program"],
    }
    sweep_vars = sweep_utils.create_sweep_command_args(command)
    sweep_vars.update(interpreter=[interpreter], program=[command["program"]], env=["/usr/bin/env"])
    out = []
    for chunk in sweep_utils.create_sweep_command(list(sweep.get("command") or sweep_utils.DEFAULT_SWEEP_COMMAND)):
        chunk = str(chunk)
        out += (sweep_vars.get(chunk[2:-1]) or []) if chunk.startswith("${") and chunk.endswith("}") else [chunk]
    return out


def tiny_overrides(sweep: dict, run_dir: Path) -> list[str]:
    args = [f"--run-dir={run_dir}"]
    for flag, value in TINY.items():
        if flag not in sweep["parameters"]:
            args += [f"--{flag}", *value] if isinstance(value, list) else [f"--{flag}={value}"]
    return args


def test_there_are_sweeps():
    assert len(SWEEPS) >= 2


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.stem)
def test_sweep_file_is_valid(path):
    sweep = yaml.safe_load(path.read_text())
    assert (REPO / sweep["program"]).is_file()
    assert sweep["method"] in ("grid", "random", "bayes")
    assert sweep["metric"] == {"name": "val/cer", "goal": "minimize"}
    flags = {o for a in build_parser()._actions for o in a.option_strings}
    for name, spec in sweep["parameters"].items():
        assert f"--{name}" in flags, f"{path.name}: parameter {name!r} is not a run_experiment.py flag"
        assert {"value", "values", "distribution"} & set(spec), f"{path.name}: {name!r} has no value(s)"
    # every listed value parses as the agent would pass it (booleans as True/False)
    parser = build_parser()
    for name, spec in sweep["parameters"].items():
        for value in spec.get("values", [spec.get("value", spec.get("min"))]):
            parser.parse_args([f"--{name}={value}"])


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.stem)
def test_one_trial_trains(path, tmp_path, capsys):
    sweep = yaml.safe_load(path.read_text())
    command = agent_command(sweep)
    assert command[:3] == ["/usr/bin/env", "python", "training/run_experiment.py"]
    assert all(a.startswith("--") and "=" in a for a in command[3:])  # --name=value, booleans included
    assert "--wandb=True" in command
    assert main(command[3:] + tiny_overrides(sweep, tmp_path / "trial")) == 0
    summary = json.loads((tmp_path / "trial" / "summary.json").read_text())
    config = json.loads((tmp_path / "trial" / "config.json").read_text())
    assert summary["steps"] == 2 and config["run"]["wandb"] is True
    flat = {f"{k}".replace("_", "-"): v for section in ("model", "optim", "run") for k, v in config[section].items()}
    for name, spec in sweep["parameters"].items():
        if name in flat:
            assert flat[name] == first_value(spec), name


@pytest.mark.slow
def test_trial_as_a_subprocess(tmp_path):
    """The agent's exact command line, run from the repository root like ``wandb agent`` would."""
    sweep = yaml.safe_load(SWEEPS[0].read_text())
    command = agent_command(sweep, interpreter=sys.executable) + tiny_overrides(sweep, tmp_path / "trial")
    env = {**os.environ, "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "trial" / "summary.json").read_text())["steps"] == 2


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.stem)
def test_every_listed_model_setting_is_a_valid_model(path):
    # a grid trial that fails on start-up wastes an agent: every combination of listed model values builds
    sweep = yaml.safe_load(path.read_text())
    model_fields = {f.name for f in fields(ModelConfig)}
    options = {
        name.replace("-", "_"): spec.get("values", [spec.get("value")])
        for name, spec in sweep["parameters"].items()
        if name.replace("-", "_") in model_fields
    }
    for combination in itertools.product(*options.values()):
        ModelConfig(**dict(zip(options, combination)))
