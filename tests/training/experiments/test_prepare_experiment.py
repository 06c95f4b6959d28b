"""prepare_experiment.py: specs -> one run_experiment.py command per run; --run keeps going past failures."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from training.experiments import prepare_experiment as pe
from training.run_experiment import build_parser

REPO = Path(__file__).resolve().parents[3]
TINY = {
    "height": 32,
    "cnn_channels": [8, 16],
    "feature_dim": 32,
    "lstm_hidden": 32,
    "conv_blocks": 1,
    "lstm_layers": 1,
    "synthetic_train_lines": 8,
    "synthetic_val_lines": 4,
    "batch_size": 4,
    "max_steps": 2,
    "max_epochs": 1,
    "progress": False,
    "checkpoint_every": 0,
}


def write(path: Path, spec: dict) -> Path:
    path.write_text(yaml.safe_dump(spec, sort_keys=False) if path.suffix in (".yaml", ".yml") else json.dumps(spec))
    return path


def test_grid_gives_every_combination_with_readable_names(tmp_path):
    spec = write(
        tmp_path / "s.yaml",
        {
            "name": "win",
            "base": {"lr": 0.001, "progress": False},
            "grid": {"window_width": [12, 16], "window-stride": [2, 4]},
        },
    )
    runs = pe.plan_runs(pe.load_spec(spec))
    assert [r.name for r in runs] == [
        "win-window-width-12_window-stride-2",
        "win-window-width-12_window-stride-4",
        "win-window-width-16_window-stride-2",
        "win-window-width-16_window-stride-4",
    ]
    assert {r.group for r in runs} == {"win"}
    argv = runs[0].argv("python")
    assert argv[1].endswith("run_experiment.py")
    assert "--name=win-window-width-12_window-stride-2" in argv and "--group=win" in argv
    assert "--progress=false" in argv and "--lr=0.001" in argv and "--window-width=12" in argv
    # every command parses with run_experiment.py's own parser
    args = vars(build_parser().parse_args(argv[2:]))
    assert args["model.window_width"] == 12 and args["model.window_stride"] == 2 and args["run.progress"] is False


def test_runs_list_json_and_list_values(tmp_path):
    spec = write(
        tmp_path / "s.json",
        {
            "group": "g1",
            "base": {"cnn_channels": [8, 16]},
            "runs": [{"name": "small", "lstm_hidden": 32}, {"lstm_hidden": 64, "wandb": True}],
        },
    )
    runs = pe.plan_runs(pe.load_spec(spec))
    assert [r.name for r in runs] == ["s-small", "s-lstm-hidden-64_wandb-true"]  # name defaults to the file's stem
    argv = runs[1].argv("python")
    assert argv[argv.index("--cnn-channels") + 1 : argv.index("--cnn-channels") + 3] == ["8", "16"]
    args = vars(build_parser().parse_args(argv[2:]))
    assert args["model.cnn_channels"] == [8, 16] and args["run.wandb"] is True and args["run.group"] == "g1"


def test_runs_times_grid_and_log_root(tmp_path):
    spec = {
        "name": "x",
        "log_root": str(tmp_path / "logs"),
        "runs": [{"optimizer": "adam"}, {"optimizer": "rmsprop"}],
        "grid": {"lr": [0.001, 0.0003]},
    }
    runs = pe.plan_runs(spec)
    assert len(runs) == 4 and runs[0].name == "x-optimizer-adam_lr-0.001"
    assert runs[0].run_dir == tmp_path / "logs" / runs[0].name
    assert f"--run-dir={tmp_path / 'logs' / runs[0].name}" in runs[0].argv()


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"base": {"windw_width": 3}}, "unknown flag 'windw_width'"),
        ({"grid": {"lr": 0.1}}, "non-empty list"),
        ({"grid": {"name": ["a"]}}, "set by the spec"),
        ({"runs": [{"name": "a"}, {"name": "a"}]}, "both be named"),
        ({"bsae": {}}, "unknown spec keys"),
    ],
)
def test_bad_specs_are_explained(spec, message):
    with pytest.raises(pe.SpecError, match=message):
        pe.plan_runs(spec)


def test_cli_prints_and_writes_commands(tmp_path, capsys):
    spec = write(tmp_path / "opt.yaml", {"base": {"max_steps": 5}, "grid": {"optimizer": ["adam", "rmsprop"]}})
    assert pe.main([str(spec), "--", "--device", "cpu"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(shlex.split(line)[-2:] == ["--device", "cpu"] for line in lines)
    assert pe.main([str(spec), "--output", str(tmp_path / "cmds.sh")]) == 0
    assert (tmp_path / "cmds.sh").read_text().count("run_experiment.py") == 2
    assert pe.main([str(tmp_path / "missing.yaml")]) == 2


def test_example_specs_are_valid():
    specs = sorted((REPO / "training" / "experiments").glob("*.yaml"))
    assert specs
    for spec in specs:
        runs = pe.plan_runs(pe.load_spec(spec))
        assert len(runs) >= 2 and len({r.name for r in runs}) == len(runs)
        for run in runs:
            build_parser().parse_args(run.argv()[2:])


@pytest.mark.slow
def test_run_continues_past_a_failure(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    spec = write(
        tmp_path / "e.yaml",
        {
            "name": "e",
            "log_root": str(tmp_path / "logs"),
            "base": TINY,
            "runs": [{"name": "bad", "window_width": 2}, {"name": "good"}, {"name": "done"}],
        },
    )
    (tmp_path / "logs" / "e-done").mkdir(parents=True)
    (tmp_path / "logs" / "e-done" / "summary.json").write_text("{}")  # finished earlier: skipped
    assert pe.main([str(spec), "--run"]) == 1
    out = capsys.readouterr().out
    assert "e-bad: FAILED" in out and "e-done: already done" in out
    assert "1 ok, 1 skipped, 1 failed: e-bad" in out
    assert json.loads((tmp_path / "logs" / "e-good" / "summary.json").read_text())["steps"] == 2
