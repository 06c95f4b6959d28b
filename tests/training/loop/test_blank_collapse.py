"""Blank-collapse detection: validation predictions that stay (almost) all blank trigger a warning with advice."""

from __future__ import annotations

import json

from training.loop.guard import COLLAPSE_SHARE, blank_share, collapse_advice
from training.loop.trainer import fit

from ..helpers import tiny_config


def test_blank_share():
    assert blank_share(["abc", "de"], ["", ""]) == 1.0
    assert blank_share(["abcdefghijklmnopqrst"] * 2, ["a", "b"]) == 0.95  # one character of twenty per line
    assert blank_share(["abc", "de"], ["abc", "de"]) == 0.0
    assert blank_share(["abc", "de"], ["abc", ""]) == 0.5
    assert blank_share([], []) == 0.0


def test_advice_names_the_runs_own_settings():
    config = tiny_config(
        "unused", model={"window_stride": 8, "shared_cnn": False}, optim={"lr": 0.0, "optimizer": "adam"}
    )
    text = collapse_advice(config, 3, 120, 1.0, 1.4)
    assert "3 epochs" in text and "120 steps" in text
    assert "--lr is 0.0" in text and "--optimizer rmsprop" in text
    assert "--window-stride 8 px gives 1.4 frames" in text and "lower --window-stride (e.g. 4)" in text


def test_short_run_warns_after_n_blank_epochs(tmp_path, capsys):
    # Two epochs of one step each: far too short to learn anything, so CTC predicts only blanks.
    config = tiny_config(
        tmp_path / "run",
        data={"synthetic_train_lines": 4, "synthetic_val_lines": 4},
        optim={"max_epochs": 2, "lr": 3e-3},
        run={"blank_collapse_epochs": 2},
    )
    fit(config)
    out = capsys.readouterr().out
    assert out.count("validation predictions have been (almost) all blank for 2 epochs") == 1
    assert "learning rate: --lr 0.003" in out and "window stride" in out
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    events = [r for r in records if r["kind"] == "event" and r["event"] == "blank_collapse"]
    assert len(events) == 1 and events[0]["epochs"] == 2 and events[0]["blank_share"] >= COLLAPSE_SHARE
    assert events[0]["step"] == 2 and events[0]["frames_per_needed_frame"] > 1
