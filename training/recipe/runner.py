"""Multi-stage training recipes: one YAML file, one command, resumable (docs/recipe.md).

    text-recognizer-train --recipe bundled --dry-run                 # the plan: stages, expected times, what is done
    text-recognizer-train --recipe bundled                           # run it (again: done stages are skipped)
    text-recognizer-train --recipe bundled --set data=/data/shared --set precision=32 --until s08
    text-recognizer-train --recipe path/to/recipe.yaml --recipe-dir /scratch/rebuild --only s14-mean

A recipe (``training/recipes/<name>.yaml``, or any path) is a list of stages run in order in a work directory
(``--recipe-dir``, default ``training/logs/recipe-<name>``). Each stage has a ``name``, a ``kind``, a ``note``,
the ``expected`` time where it was measured, its ``inputs`` and ``outputs`` (paths relative to the work
directory unless absolute) and the command line of its kind's program (``args``):

- ``fetch``: fonts from the npm registry (``npm pack @fontsource/<name>``, the ``-latin-400-normal.woff`` file,
  as docs/datasets.md does by hand) and other npm packages (unpacked), into ``out``;
- ``pack``: ``training/sources/pack_folder.py`` (one run per string in ``args``);
- ``train``: ``run_experiment.py`` with ``args``; the recipe adds ``--run-dir <run_dir>`` and
  ``--init-from <init_from>``. A run directory that holds a ``last.pt`` but no done-marker (a stop, Ctrl-C,
  SIGTERM, a crash after a checkpoint) is continued with ``--resume`` and the same flags;
- ``average``: ``training/release/average_checkpoints.py``; ``lm``: ``python -m training.decoder.build_lm``;
  ``export``: ``training/release/export_model.py``;
- ``tune``: a program, first token of each run: a module run as ``python -m`` (``training.decoder``, the decoder
  tuner; ``training.segmenter.train``) or a script path of the repository (``*.py``).

Strings may use ``${variable}``: the recipe's ``variables`` (defaults, changed with ``--set name=value``), plus
``${work}`` (the work directory) and ``${repo}`` (the repository). A stage that finished writes
``.recipe/<stage>.done.json`` in the work directory (wall time included) and is skipped on every later run.

This module runs the stages and holds the command line; the recipe's data model is training/recipe/spec.py, its
reading and checking training/recipe/load.py, the plan and done-markers training/recipe/plan.py and the fetch stage
training/recipe/fetch.py, so that each can be read (and tested) without the others below it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from training.recipe.fetch import fetch
from training.recipe.load import load_recipe
from training.recipe.plan import attempts_path, describe_plan, marker, plan, record_attempt
from training.recipe.spec import (
    KINDS,
    REPO,
    Recipe,
    RecipeError,
    Stage,
    minutes_text,
    program_command,
    program_missing,
    shown,
    train_argv,
)

TrainMain = Callable[[list[str]], int]


class StageInterrupted(Exception):
    """A stage stopped before its end (Ctrl-C, SIGTERM): what it saved stays for the next run."""


# ---------------------------------------------------------------------------------------------------- running


def run_recipe(recipe: Recipe, train: TrainMain, until: str | None = None, only: str | None = None) -> int:
    """Run the selected stages that are not done, in order; 0 when all of them finished."""
    steps = plan(recipe, until, only)
    missing = [(s.stage.name, m) for s in steps for m in s.missing]
    if missing:
        raise RecipeError("inputs missing, nothing was run:\n" + "\n".join(f"  stage {n}: {m}" for n, m in missing))
    recipe.state.mkdir(parents=True, exist_ok=True)
    with _lock(recipe):
        shutil.copyfile(recipe.path, recipe.state / "recipe.yaml")
        (recipe.state / "variables.json").write_text(json.dumps(recipe.variables, indent=2))
        for step in steps:
            stage = step.stage
            if step.done is not None:
                if step.selected:
                    again = f" (delete {shown(marker(recipe, stage), recipe.work)} to run it again)"
                    hint = again if step.changed else ""
                    print(f"[recipe] {stage.name}: {step.status}; skipped{hint}")
                continue
            if not step.selected:
                continue
            _run_stage(recipe, stage, train)
    total = sum(s.stage.expected[0].minutes for s in steps if s.selected)
    print(f"[recipe] {recipe.name}: the selected stages are done (expected {minutes_text(total)} in all); "
          f"work directory {recipe.work}")
    return 0


def _run_stage(recipe: Recipe, stage: Stage, train: TrainMain) -> None:
    expected = stage.expected[0].describe()
    print(f"[recipe] {stage.name} ({stage.kind}, stage {stage.index + 1} of {len(recipe.stages)}): expected {expected}",
          flush=True)
    commands = stage.commands()  # as run: a train stage's --resume is decided before it starts
    start = time.monotonic()
    try:
        if stage.kind == "fetch":
            fetch(stage)
        elif stage.kind == "train":
            _train(recipe, stage, train)
        else:
            for run in stage.runs:
                _call(recipe, stage, list(run))
    except (KeyboardInterrupt, StageInterrupted):
        record = record_attempt(recipe, stage, time.monotonic() - start)
        how = "it (--resume from its last.pt)" if stage.kind == "train" else "from its start"
        raise StageInterrupted(f"stage {stage.name} stopped after {minutes_text(record['seconds'] / 60)} in "
                               f"{record['attempts']} attempt(s); run the same command again to continue "
                               f"{how}") from None
    except BaseException:
        record_attempt(recipe, stage, time.monotonic() - start)
        raise
    lost = [p for p in stage.outputs if not p.exists()]
    if lost:
        raise RecipeError(f"stage {stage.name} finished but did not make {shown(lost[0], recipe.work)}")
    seconds = time.monotonic() - start
    attempts = attempts_path(recipe, stage)
    earlier = json.loads(attempts.read_text()) if attempts.is_file() else {"seconds": 0.0, "attempts": 0}
    record = {
        "stage": stage.name, "kind": stage.kind, "fingerprint": stage.fingerprint(),
        "wall_seconds": round(seconds + earlier["seconds"], 1), "last_attempt_seconds": round(seconds, 1),
        "attempts": earlier["attempts"] + 1, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "expected_minutes": stage.expected[0].minutes, "commands": commands,
    }
    marker(recipe, stage).write_text(json.dumps(record, indent=2))
    attempts.unlink(missing_ok=True)
    print(f"[recipe] {stage.name}: done in {minutes_text(record['wall_seconds'] / 60)} "
          f"(expected {minutes_text(stage.expected[0].minutes)})", flush=True)


def _train(recipe: Recipe, stage: Stage, train: TrainMain) -> None:
    resume = (stage.run_dir / "last.pt").is_file()
    if resume:
        where = shown(stage.run_dir, recipe.work)
        print(f"[recipe] {stage.name}: {where} holds a last.pt: continuing it with --resume", flush=True)
    argv = train_argv(stage, resume)
    (stage.cwd or recipe.work).mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(stage.cwd or recipe.work):
        code = _in_process(train, argv)
    if code != 0:
        hint = (" (a resumed run must keep its settings: delete its run directory to start the stage over)"
                if resume else "")
        raise RecipeError(f"stage {stage.name}: run_experiment.py exited with status {code}{hint}")
    summary_path = stage.run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    if summary.get("stop_reason") == "interrupted":  # the trainer saved last.pt and returned normally
        raise StageInterrupted


def _in_process(main: Callable[[list[str]], int], argv: list[str]) -> int:
    try:
        return int(main(argv) or 0)
    except SystemExit as exit_:  # argparse errors
        return exit_.code if isinstance(exit_.code, int) else 2


def _call(recipe: Recipe, stage: Stage, run: list[str]) -> None:
    spec = KINDS[stage.kind]
    cwd = stage.cwd or recipe.work
    cwd.mkdir(parents=True, exist_ok=True)
    for item in stage.outputs:  # programs write their files, not always the folders above them
        item.parent.mkdir(parents=True, exist_ok=True)
    if spec.get("process"):
        if spec.get("program"):
            missing = program_missing(run[0])
            if missing:
                raise RecipeError(f"stage {stage.name}: {missing}")
            command = program_command(run[0], run[1:])
        else:
            command = [sys.executable, "-m", spec["module"], *run]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        print("[recipe] $ " + shlex.join(command), flush=True)
        code = subprocess.run(command, cwd=cwd, env=env).returncode
    else:
        print(f"[recipe] $ python -m {spec['module']} " + shlex.join(run), flush=True)
        with contextlib.chdir(cwd):
            code = _in_process(importlib.import_module(spec["module"]).main, run)
    if code != 0:
        program = run[0] if spec.get("program") else spec["module"]
        raise RecipeError(f"stage {stage.name}: {program} exited with status {code} (its message is above)")


# ---------------------------------------------------------------------------------------------------- the lock


@contextlib.contextmanager
def _lock(recipe: Recipe):
    path = recipe.state / "lock"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        pid = int(path.read_text().strip() or 0)
        if pid and _alive(pid):
            raise RecipeError(f"another run of this recipe (pid {pid}) uses {recipe.work}") from None
        path.unlink()  # left by a run that was killed
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="text-recognizer-train",
        description="Run a multi-stage training recipe (training/recipes/<name>.yaml or a path): its stages in order "
                    "in a work directory; done stages are skipped, a stopped train stage is resumed (docs/recipe.md).",
    )
    parser.add_argument("--recipe", required=True, metavar="NAME_OR_PATH",
                        help="a recipe of training/recipes (e.g. bundled) or a .yaml file")
    parser.add_argument("--recipe-dir", type=Path, default=None, metavar="DIR",
                        help="work directory (default: training/logs/recipe-<name>)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (stages, commands, expected times, what is done) and run nothing")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="assignments",
                        help="set a recipe variable, e.g. --set data=/path/to/shared/data (repeatable)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--until", metavar="STAGE", help="run the stages up to and including STAGE")
    which.add_argument("--only", metavar="STAGE", help="run only STAGE (its inputs must be on disk)")
    return parser


def main(argv: Sequence[str] | None, train: TrainMain) -> int:
    """``text-recognizer-train --recipe ...``: ``train`` is ``run_experiment.main`` (each train stage calls it)."""
    args = build_parser().parse_args(argv)
    try:
        overrides = {}
        for item in args.assignments:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise RecipeError(f"--set {item!r}: expected NAME=VALUE")
            overrides[key.strip()] = value
        recipe = load_recipe(args.recipe, args.recipe_dir, overrides)
        if args.dry_run:
            steps = plan(recipe, args.until, args.only)
            print(describe_plan(recipe, steps))
            return 1 if any(s.missing for s in steps) else 0
        return run_recipe(recipe, train, args.until, args.only)
    except RecipeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except StageInterrupted as stop:
        print(f"[recipe] {stop}", file=sys.stderr)
        return 130
