"""compare_runs.py: a table sorted by best val CER with the differing config, and a PNG, from our own files."""

from __future__ import annotations

import json
from pathlib import Path

from training.experiments import compare_runs as cr
from training.loop.trainer import fit

from ..helpers import tiny_config


def fake_run(
    root: Path, name: str, cers: list[float], *, optimizer="adam", group="g", finished=True, extra=None
) -> Path:
    run = root / name
    run.mkdir(parents=True)
    config = {
        "model": {"height": 32, "cnn_channels": [8, 16]},
        "optim": {"optimizer": optimizer, "lr": 0.001},
        "run": {"name": name, "run_dir": str(run), "group": group},
        "data": {"data": ["synthetic"], **(extra or {})},
        "codec": {"chars": "abc"},
    }
    (run / "config.json").write_text(json.dumps(config))
    lines = []
    for epoch, value in enumerate(cers, 1):
        lines += [
            {"kind": "train", "step": epoch * 10 - 5, "epoch": epoch, "loss": 3.0 / epoch},
            {"kind": "train", "step": epoch * 10, "epoch": epoch, "loss": 2.5 / epoch},
            {"kind": "val", "epoch": epoch, "step": epoch * 10, "val_cer": value, "val_wer": 1.0, "val_loss": 2.0},
        ]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + '\n{"kind": "tr')  # cut-off last line
    if finished:
        (run / "summary.json").write_text(
            json.dumps(
                {
                    "best_val_cer": min(cers),
                    "best_epoch": cers.index(min(cers)) + 1,
                    "final_val_cer": cers[-1],
                    "final_val_wer": 1.0,
                    "steps": 10 * len(cers),
                    "elapsed_minutes": 1.5,
                    "train_lines_per_sec": 12.0,
                    "parameters": 1000,
                }
            )
        )
    return run


def test_table_sorted_by_best_cer_with_differing_config(tmp_path, capsys):
    fake_run(tmp_path / "logs", "a-adam", [0.9, 0.6, 0.7], optimizer="adam")
    fake_run(tmp_path / "logs", "b-rmsprop", [0.8, 0.4, 0.5], optimizer="rmsprop")
    fake_run(tmp_path / "logs", "c-sgd-running", [0.95], optimizer="adamw", finished=False)
    fake_run(tmp_path / "other", "d-other-group", [0.1], group="h")
    plot = tmp_path / "out" / "cmp.png"
    assert cr.main([str(tmp_path / "logs"), str(tmp_path / "other"), "--group", "g", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out.splitlines()
    header, rows = out[0], [line for line in out[2:] if not line.startswith("plot:")]
    assert "best val CER" in header and "optimizer" in header
    assert "lr" not in header.split() and "height" not in header.split()  # same in every run: not shown
    assert [r.split()[0] for r in rows] == ["b-rmsprop", "a-adam", "c-sgd-running"]
    assert "0.4000" in rows[0] and "rmsprop" in rows[0] and "unfinished" in rows[2] and "0.9500" in rows[2]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000


def test_markdown_and_run_dirs_given_directly(tmp_path, capsys):
    a = fake_run(tmp_path, "a", [0.5], extra={"augment": True})
    b = fake_run(tmp_path, "b", [0.3])
    assert cr.main([str(a), str(b), "--format", "markdown", "--no-plot"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| run |") and out[1].startswith("|---") and out[2].startswith("| b |")
    assert "augment" in out[0]  # a setting one run lacks is shown as differing ('-')


def test_curves_use_fractional_epochs(tmp_path):
    run = cr.load_run(fake_run(tmp_path, "r", [0.9, 0.8]))
    xs, cers, label = run.val_curve()
    assert label == "epoch" and xs == [1.0, 2.0] and cers == [0.9, 0.8]
    tx, losses = run.train_curve(window=1)
    assert tx == [0.5, 1.0, 1.5, 2.0] and losses[0] == 3.0


def test_missing_path_and_no_runs(tmp_path, capsys):
    assert cr.main([str(tmp_path / "nope")]) == 2
    assert cr.main([str(tmp_path), "--no-plot"]) == 1
    assert "no runs" in capsys.readouterr().err


def test_real_runs_trained_with_wandb_off(tmp_path, capsys):
    for optimizer in ("adam", "rmsprop"):
        fit(
            tiny_config(
                tmp_path / "logs" / optimizer,
                optim={"optimizer": optimizer, "max_steps": 2, "max_epochs": 1},
                run={"group": "real"},
            )
        )
    plot = tmp_path / "real.png"
    capsys.readouterr()
    assert cr.main([str(tmp_path / "logs"), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "optimizer" in out.splitlines()[0] and "done" in out and plot.exists()


def test_curves_against_minutes_from_a_real_run(tmp_path, capsys):
    # the trainer logs elapsed minutes with every train and val row: the CER-vs-time curve of a run
    fit(tiny_config(tmp_path / "logs" / "timed", optim={"max_steps": 3, "max_epochs": 2, "batch_size": 8}))
    run = cr.load_run(tmp_path / "logs" / "timed")
    xs, cers, label = run.val_curve("minutes")
    assert label.startswith("minutes") and len(xs) == len(cers) == len(run.val) >= 1 and 0 < xs[0] < 5
    assert xs == sorted(xs)
    tx, _ = run.train_curve(x="minutes")
    assert len(tx) == 3 and tx == sorted(tx) and tx[-1] <= xs[-1]
    plot = tmp_path / "minutes.png"
    assert cr.main([str(tmp_path / "logs"), "--x", "minutes", "--plot", str(plot)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_resumed_run_shows_its_overridden_budget(tmp_path):
    """config.json keeps the starting configuration; the budget a --resume changed is applied on top."""
    fit(tiny_config(tmp_path / "run", optim={"max_steps": 1, "max_epochs": 1}))
    fit(tiny_config(tmp_path / "run", optim={"max_steps": 2, "max_epochs": 2}, run={"resume": True}))
    assert json.loads((tmp_path / "run" / "config.json").read_text())["optim"]["max_steps"] == 1
    config = cr.load_run(tmp_path / "run").config
    assert (config["optim"]["max_steps"], config["optim"]["max_epochs"]) == (2, 2)
