"""Recipes (training/recipe*.py, ``text-recognizer-train --recipe``): the shipped bundled recipe is consistent and
its dry run lists every stage; a tiny recipe (two train stages on the built-in synthetic lines, the second started
from the first, then their mean) runs end to end through ``run_experiment.main``, a rerun skips what is done, a
train stage whose run directory holds a ``last.pt`` continues with ``--resume``; malformed recipes are refused."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from training.recipe.load import load_recipe
from training.recipe.plan import plan
from training.recipe.spec import REPO, RecipeError
from training.run_experiment import main

from ..helpers import TINY_FLAGS

TINY = shlex.join([*TINY_FLAGS, "--synthetic-train-lines", "8", "--synthetic-val-lines", "4", "--batch-size", "4",
                   "--max-epochs", "10", "--lr-schedule", "none", "--warmup-steps", "0", "--checkpoint-every", "0",
                   "--device", "cpu", "--threads", "1"])


def tiny_recipe(path: Path, **replace: str) -> Path:
    """Two train stages of a few steps each (the second from the first's best.pt), then their mean."""
    text = f"""
name: tiny
variables:
  steps: "2"
stages:
  - name: a
    kind: train
    note: from scratch
    expected: {{minutes: 0.1, machine: "any CPU"}}
    run_dir: runs/a
    args: {TINY} --max-steps ${{steps}} --seed 0
  - name: b
    kind: train
    note: continued from a
    expected: {{minutes: 0.1, machine: "any CPU"}}
    run_dir: runs/b
    init_from: runs/a/best.pt
    args: {TINY} --max-steps 2 --seed 1
  - name: mean
    kind: average
    note: the mean of both
    expected: {{minutes: 0.1, machine: "any CPU", estimate: true}}
    inputs: [runs/a/best.pt, runs/b/best.pt]
    outputs: [models/mean.pt]
    args: runs/a/best.pt runs/b/best.pt --out models/mean.pt
"""
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    return path


def test_bundled_recipe_validates_and_dry_run_lists_its_stages(tmp_path, capsys):
    recipe = load_recipe("bundled", tmp_path / "work")
    names = [stage.name for stage in recipe.stages]
    trains = [stage for stage in recipe.stages if stage.kind == "train"]
    # 15 model-card stages (1 and 7 in two runs each) and their export, then stage 16 on the archives of data/ (#72),
    # the mean that shipped (crnn-latin-2026.12.06b), its decoder bundles and its export, the segmenter on archival
    # pages and its second run, stages 17 and 18 (#72) and the mean that ships (crnn-latin-2026.12.07a) with its
    # decoder bundles and its export, then stage 19 (a grown model, #72; its time still an estimate)
    assert len(trains) == 21 and names[names.index("export") + 1:] == [
        "sources", "pack-sources40", "s16-archives", "s16-soup", "french-text-archives", "lm-fr-archives",
        "tune-fr-archives", "three-readings-fr-archives", "logits-archives", "tune-archives",
        "three-readings-archives", "export-archives", "segmenter-archives", "export-segmenter-archives",
        "segmenter-archives2", "segmenter-letterheads", "s17-archives", "s18-distill",
        "s18-soup", "tune-fr-07a", "three-readings-fr-07a", "logits-07a", "tune-07a", "three-readings-07a",
        "export-07a", "s19-grow"]
    # Every input is made by an earlier stage, or is data from outside (the IAM and out-of-domain folders).
    outside = (Path(recipe.variables["data"]),)  # the data setting, nothing beside the repository
    for stage in recipe.stages:
        for item in stage.inputs:
            made = any(item == out or out in item.parents for s in recipe.stages[: stage.index] for out in s.outputs)
            assert made or any(root in item.parents for root in outside), (stage.name, item)
    # The model card's "about 20.5 CPU-hours and 6.5 H200-minutes": the measured minutes of the train stages.
    cpu = sum(s.expected[0].minutes for s in trains if "CPU" in s.expected[0].machine and not s.expected[0].estimate)
    gpu = [s.expected[0] for s in trains if "H200" in s.expected[0].machine]
    assert cpu == 1147 + 86 + 82 + 76 + 70 and [e.minutes for e in gpu] == [6.5]

    data = tmp_path / "data"  # --set data=...: the folders the recipe reads, empty here (nothing runs)
    for folder in ("iam/train", "iam/train_extra", "iam/val", "stanford_memorials_1905", "gw_washington_1755",
                   "copiste_dun_jour/train", "copiste_dun_jour/val"):
        (data / folder).mkdir(parents=True)
    code = main(["--recipe", "bundled", "--dry-run", "--recipe-dir", str(tmp_path / "work"), "--set", f"data={data}"])
    out = capsys.readouterr().out
    assert code == 0  # every stage reads its data from the data setting, none from beside the repository
    for name in names:
        assert f" {name} " in out
    assert f"variables: data={data.resolve()}" in out and "expected in all: 1,935" in out
    assert "--max-steps 8224" in out and "done: 0 of 73 stages" in out
    assert not (tmp_path / "work").exists()  # a dry run writes nothing


def test_tiny_recipe_runs_end_to_end_and_a_rerun_skips_done_stages(tmp_path, capsys):
    path, work = tiny_recipe(tmp_path / "tiny.yaml"), tmp_path / "work"
    assert main(["--recipe", str(path), "--recipe-dir", str(work)]) == 0
    out = capsys.readouterr().out
    assert "[recipe] a: done" in out and "[recipe] b: done" in out and "[recipe] mean: done" in out
    for name in ("a", "b", "mean"):
        record = json.loads((work / ".recipe" / f"{name}.done.json").read_text())
        assert record["stage"] == name and record["wall_seconds"] >= 0 and record["attempts"] == 1
    config_b = json.loads((work / "runs/b/config.json").read_text())
    assert config_b["run"]["init_from"] == str(work / "runs/a/best.pt")
    a, b = (load_checkpoint(work / f"runs/{r}/best.pt") for r in "ab")
    mean = load_checkpoint(work / "models/mean.pt")
    for name, value in mean.model_state.items():
        if value.is_floating_point():
            expected = (a.model_state[name].double() + b.model_state[name].double()) / 2
            torch.testing.assert_close(value, expected.to(value.dtype))

    stamps = {p: p.stat().st_mtime_ns for p in work.rglob("*.pt")}
    assert main(["--recipe", str(path), "--recipe-dir", str(work)]) == 0
    out = capsys.readouterr().out
    assert all(f"[recipe] {n}: done in" in out for n in ("a", "b", "mean")) and out.count("; skipped") == 3
    assert {p: p.stat().st_mtime_ns for p in work.rglob("*.pt")} == stamps  # nothing ran again

    (work / ".recipe/mean.done.json").unlink()  # --only: one stage, its inputs from the earlier runs on disk
    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--only", "mean"]) == 0
    out = capsys.readouterr().out
    assert "[recipe] mean: done in" in out and "[recipe] a:" not in out

    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--dry-run"]) == 0
    assert capsys.readouterr().out.count("  done in ") == 3

    # A done stage whose definition changed is still skipped, and the run says how to run it again.
    swap = {"args: runs/a/best.pt runs/b/best.pt": "args: runs/b/best.pt runs/a/best.pt"}
    changed = tiny_recipe(tmp_path / "changed.yaml", **swap)
    assert main(["--recipe", str(changed), "--recipe-dir", str(work), "--only", "mean"]) == 0
    out = capsys.readouterr().out
    assert "(recipe changed since: not rerun)" in out and "delete .recipe/mean.done.json to run it again" in out

    # A done stage's output removed to save disk matters only to a stage that still needs it.
    (work / "models/mean.pt").unlink()
    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--dry-run"]) == 0
    assert "(since removed: models/mean.pt)" in capsys.readouterr().out
    (work / "runs/a/best.pt").unlink()
    (work / ".recipe/mean.done.json").unlink()
    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--only", "mean"]) == 2
    assert "runs/a/best.pt: stage a made it and is marked done, but it is gone: delete .recipe/a.done.json" in (
        capsys.readouterr().err
    )


def test_a_train_stage_with_a_last_checkpoint_and_no_done_marker_continues_with_resume(tmp_path, capsys):
    """What a stop leaves (Ctrl-C, SIGTERM, a crash after a checkpoint): last.pt in the run directory, no marker.
    Here the stop is the run's own step budget; the rerun raises it (an override --resume allows) and continues."""
    path, work = tiny_recipe(tmp_path / "tiny.yaml"), tmp_path / "work"
    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--until", "a"]) == 0
    assert not (work / "runs/b").exists()
    (work / ".recipe/a.done.json").unlink()
    capsys.readouterr()

    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--dry-run", "--set", "steps=4"]) == 0
    assert "to resume (--resume from its last.pt)" in capsys.readouterr().out
    assert main(["--recipe", str(path), "--recipe-dir", str(work), "--until", "a", "--set", "steps=4"]) == 0
    out = capsys.readouterr().out
    assert "continuing it with --resume" in out and "resumed" in out
    summary = json.loads((work / "runs/a/summary.json").read_text())
    assert summary["steps"] == 4 and summary["stop_reason"] == "reached --max-steps 4"
    history = (work / "runs/a/config_overrides.jsonl").read_text()
    assert "--max-steps" in history
    record = json.loads((work / ".recipe/a.done.json").read_text())
    assert record["commands"][0].endswith("--resume")


def test_a_fetch_stage_builds_its_font_folder_whole_and_keeps_one_already_there(tmp_path, capsys):
    """The offline half of a fetch (fonts of an earlier folder, second copies of some); npm is not needed for it."""
    fonts = tmp_path / "fonts29"
    fonts.mkdir()
    for name in ("allura", "caveat", "kalam"):
        (fonts / f"{name}-latin-400-normal.woff").write_bytes(name.encode())
    recipe = tmp_path / "fonts.yaml"
    recipe.write_text(f"""
name: fonts
stages:
  - name: mix
    kind: fetch
    note: two scripts twice as often
    expected: {{minutes: 0.1, machine: "any CPU"}}
    out: fonts_mix
    files: 5
    include: ["{fonts}"]
    copies: [allura, kalam]
""")
    work = tmp_path / "work"
    assert main(["--recipe", str(recipe), "--recipe-dir", str(work)]) == 0
    made = sorted(p.name for p in (work / "fonts_mix").iterdir())
    names = ["allura", "caveat", "copy2-allura", "copy2-kalam", "kalam"]
    assert made == [f"{name}-latin-400-normal.woff" for name in names]
    assert not (work / "fonts_mix.partial").exists()
    (work / ".recipe/mix.done.json").unlink()  # e.g. a font folder shared by two work directories
    assert main(["--recipe", str(recipe), "--recipe-dir", str(work)]) == 0
    assert "is already there (fetched before): kept" in capsys.readouterr().out


@pytest.mark.parametrize(
    "replace, message",
    [
        ({"kind: average": "kind: averages"}, "unknown kind 'averages'"),
        ({"    run_dir: runs/b\n": ""}, "missing field 'run_dir'"),
        ({"--max-steps 2 --seed 1": "--max-steps ${stepz} --seed 1"}, "unknown variable ${stepz}"),
        ({"inputs: [runs/a/best.pt, runs/b/best.pt]": "inputs: [runs/c/best.pt]"},
         "runs/c/best.pt: made by no stage and not on disk"),
        ({"init_from: runs/a/best.pt": "init_from: models/mean.pt"}, "is made by a later stage (mean)"),
        ({"note: from scratch": "notes: from scratch"}, "missing field 'note'"),
        ({"--max-steps 2 --seed 1": "--max-steps 2 --seed 1 --run-dir x"}, "the recipe gives these itself"),
        ({"--max-steps 2 --seed 1": "--max-stepz 2 --seed 1"},
         "stage b: run_experiment.py would refuse its args: unrecognized arguments: --max-stepz 2"),
        ({"--max-steps 2 --seed 1": "--max-steps 2 --augment-p 1.5"}, "--augment-p must be a share in [0, 1]"),
    ],
)
def test_malformed_recipes_are_refused_before_anything_runs(tmp_path, capsys, replace, message):
    path, work = tiny_recipe(tmp_path / "tiny.yaml", **replace), tmp_path / "work"
    assert main(["--recipe", str(path), "--recipe-dir", str(work)]) == 2
    assert message in capsys.readouterr().err
    assert not (work / "runs").exists()


def test_unknown_names_on_the_command_line_are_refused(tmp_path, capsys):
    path, work = tiny_recipe(tmp_path / "tiny.yaml"), str(tmp_path / "work")
    assert main(["--recipe", str(path), "--recipe-dir", work, "--set", "data=/x"]) == 2
    assert "recipe has no variable 'data' (variables: steps)" in capsys.readouterr().err
    assert main(["--recipe", str(path), "--recipe-dir", work, "--until", "c"]) == 2
    assert "no stage 'c' in recipe tiny (stages: a, b, mean)" in capsys.readouterr().err
    assert main(["--recipe", "no-such-recipe", "--dry-run"]) == 2
    assert "no recipe 'no-such-recipe' (shipped: bundled" in capsys.readouterr().err
    with pytest.raises(RecipeError, match="--until and --only"):
        plan(load_recipe(str(path), work), until="a", only="b")


def test_no_stage_of_the_bundled_recipe_runs_a_benchmark(tmp_path):
    """``benchmarks/`` only measures: the recipe rebuilds the bundled model without it."""
    recipe = load_recipe("bundled", tmp_path / "work")
    programs = [run[0] for stage in recipe.stages if stage.kind == "tune" for run in stage.runs]
    assert programs and not [p for p in programs if p.startswith("benchmarks") or p.endswith(".py")]


def test_decoder_stages_run_the_decoder_tuner_end_to_end(tmp_path, capsys):
    """The recipe's decoder stages, small: an LM of the fixture labels, the model's log-probabilities cached once and
    three readings of them, the beam settings and calibration tuned on the cache, the three-readings section added."""
    model = REPO / "text_recognizer" / "artifacts" / "default.pt"
    lines = REPO / "tests" / "fixtures" / "lines"
    grid = "--lm-weights 0.6 1.4 --word-bonuses 1.5 --word-lm-weights 0 --blank-penalties 0 --beam-width 4"
    recipe = tmp_path / "decoder.yaml"
    recipe.write_text(f"""
name: decoder
stages:
  - name: lm
    kind: lm
    note: the fixture labels' language models
    expected: {{minutes: 0.1, machine: test}}
    inputs: [{lines}]
    outputs: [decoder/lm.decoder.pt]
    args: {lines} --order 4 --word-min-count 1 --checkpoint {model} --out decoder/lm.decoder.pt
  - name: logits
    kind: tune
    note: one reading and three, cached
    expected: {{minutes: 0.1, machine: test}}
    inputs: [{lines}]
    outputs: [decoder/one.pt, decoder/three.pt]
    args:
      - training.decoder cache --checkpoint {model} --data {lines} --out decoder/one.pt
      - training.decoder cache --checkpoint {model} --data {lines} --out decoder/three.pt --readings 3
  - name: tune
    kind: tune
    note: single readings, then three
    expected: {{minutes: 0.1, machine: test}}
    inputs: [decoder/lm.decoder.pt, decoder/one.pt, decoder/three.pt]
    outputs: [decoder/single.decoder.pt, decoder/final.decoder.pt]
    args:
      - >-
        training.decoder tune --checkpoint {model} --cache decoder/one.pt --bundle decoder/lm.decoder.pt
        --out decoder/single.decoder.pt {grid}
      - >-
        training.decoder tune --checkpoint {model} --cache decoder/three.pt --three-readings
        --bundle decoder/single.decoder.pt --out decoder/final.decoder.pt {grid}
""")
    work = tmp_path / "work"
    assert main(["--recipe", str(recipe), "--recipe-dir", str(work)]) == 0
    out = capsys.readouterr().out
    assert "[recipe] $ " in out and "-m training.decoder tune" in out and "[recipe] tune: done" in out
    final = torch.load(work / "decoder" / "final.decoder.pt", weights_only=False)
    assert final["three_readings"]["shift"] == 2 and final["beam"]["beam_width"] >= 1
