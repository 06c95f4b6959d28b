"""Reading a recipe's YAML file: variables expanded, every field, kind and path checked, with errors that say
where and why, so that a malformed recipe stops before any stage runs (the data model: training/recipe/spec.py).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.recipe.spec import (
    BUILTINS,
    COMMON_FIELDS,
    DEFAULT_ROOT,
    KINDS,
    RECIPES,
    REPO,
    Expected,
    Recipe,
    RecipeError,
    Stage,
    is_module_name,
    is_script,
    shown,
)

#: Flags of a train stage that the recipe gives itself (from ``run_dir`` / ``init_from`` and the resume logic).
_RECIPE_FLAGS = ("--run-dir", "--init-from", "--resume", "--name")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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
            maker = maker_of(recipe, item)
            if maker is not None and maker.index >= stage.index:
                raise RecipeError(f"{where}: stage {stage.name}: input {shown(item, work_dir)} is made by "
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


def _stage_spec(raw: Any, index: int, where: str) -> tuple[str, dict[str, Any]]:
    """(label for messages, the kind's spec) after checking the fields every stage has and its kind's fields."""
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
    unknown = set(raw) - COMMON_FIELDS - spec["fields"]
    if unknown:
        raise RecipeError(f"{label}: unknown field(s) {sorted(unknown)} for a {kind} stage "
                          f"(fields: {', '.join(sorted(COMMON_FIELDS | spec['fields']))})")
    for key in sorted(spec["required"]):
        if key not in raw:
            needs = ", ".join(sorted(spec["required"]))
            raise RecipeError(f"{label}: missing field '{key}' (a {kind} stage needs {needs})")
    if not isinstance(raw["note"], str) or not raw["note"].strip():
        raise RecipeError(f"{label}: 'note' must say what the stage does")
    return label, spec


@dataclass(frozen=True)
class _Resolver:
    """Expands one stage's variables and resolves its paths against the work folder, naming the stage in errors."""

    raw: dict
    label: str
    variables: dict[str, str]
    work: Path

    def expand(self, text: Any, field: str) -> str:
        """A scalar field with its ``${variables}`` expanded."""
        return _expand(_scalar(text, f"{self.label}: {field}"), self.variables, f"{self.label}: {field}")

    def path(self, text: Any, field: str) -> Path:
        """A path field, expanded and made absolute under the work folder (normalised)."""
        value = Path(self.expand(text, field))
        return Path(os.path.normpath(value if value.is_absolute() else self.work / value))

    def paths(self, field: str) -> list[Path]:
        """A list-of-paths field (absent: empty)."""
        items = self.raw.get(field, [])
        if not isinstance(items, list):
            raise RecipeError(f"{self.label}: '{field}' must be a list of paths")
        return [self.path(item, field) for item in items]


def _runs(raw: dict, label: str, variables: dict[str, str]) -> list[tuple[str, ...]]:
    """The stage's command lines (``args``: one string or a list), split like a shell and expanded."""
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
    return runs


def _train_paths(resolve: _Resolver, runs: list[tuple[str, ...]], inputs: list[Path],
                 outputs: list[Path]) -> tuple[Path, Path | None]:
    """(run_dir, init_from) of a train stage, put first in its outputs and inputs.

    Refuses the flags the recipe gives itself, so that a stopped run resumes in the right folder.
    """
    raw, label = resolve.raw, resolve.label
    if len(runs) != 1:
        raise RecipeError(f"{label}: a train stage runs one command: 'args' must be one string")
    given = [t for t in runs[0] if t.split("=", 1)[0] in _RECIPE_FLAGS]
    if given:
        raise RecipeError(f"{label}: {', '.join(given)} in args: the recipe gives these itself "
                          "(run_dir, init_from, and --resume for a stopped run)")
    run_dir = resolve.path(raw["run_dir"], "run_dir")
    outputs.insert(0, run_dir)
    init_from = None
    if raw.get("init_from"):
        init_from = resolve.path(raw["init_from"], "init_from")
        inputs.insert(0, init_from)
    return run_dir, init_from


def _fetch_fields(resolve: _Resolver, inputs: list[Path], outputs: list[Path]) -> dict[str, Any]:
    """A fetch stage's fields (fonts, copies, include, packages, files), checked; its ``out`` goes first in outputs."""
    raw, label = resolve.raw, resolve.label
    out = resolve.path(raw["out"], "out")
    fields: dict[str, Any] = {
        "fonts": _names(raw.get("fonts", []), label, "fonts"),
        "copies": _names(raw.get("copies", []), label, "copies"),
        "include": [str(resolve.path(p, "include")) for p in _list(raw.get("include", []), label, "include")],
        "packages": {},
        "files": raw.get("files"),
    }
    packages = raw.get("packages", {})
    if not isinstance(packages, dict) or not all(_NAME.match(str(k)) for k in packages):
        raise RecipeError(f"{label}: 'packages' must map a folder name to an npm package spec")
    fields["packages"] = {str(k): resolve.expand(v, "packages") for k, v in packages.items()}
    if not (fields["fonts"] or fields["copies"] or fields["include"] or fields["packages"]):
        raise RecipeError(f"{label}: a fetch stage needs fonts, copies, include or packages")
    if fields["files"] is not None and (not isinstance(fields["files"], int) or fields["files"] < 1):
        raise RecipeError(f"{label}: 'files' is the number of font files the folder ends with, "
                          f"got {fields['files']!r}")
    outputs.insert(0, out)
    inputs.extend(Path(p) for p in fields["include"])
    return fields


def _stage(raw: Any, index: int, variables: dict[str, str], work: Path, where: str) -> Stage:
    """One checked stage: fields, kind, paths and command lines (errors name the stage)."""
    label, spec = _stage_spec(raw, index, where)
    name, kind = raw["name"], raw["kind"]
    resolve = _Resolver(raw, label, variables, work)
    expected = _expected(raw["expected"], label)
    inputs, outputs = resolve.paths("inputs"), resolve.paths("outputs")
    runs = _runs(raw, label, variables)
    cwd = None
    if "cwd" in raw:
        cwd = resolve.path(raw["cwd"], "cwd")
    fields: dict[str, Any] = {}
    run_dir = init_from = None
    if kind == "train":
        run_dir, init_from = _train_paths(resolve, runs, inputs, outputs)
    elif kind == "fetch":
        fields = _fetch_fields(resolve, inputs, outputs)
    elif spec.get("program"):
        for run in runs:
            if not run or not (is_script(run[0]) or is_module_name(run[0])):
                raise RecipeError(f"{label}: each run of a {kind} stage starts with its program: a module "
                                  "(e.g. training.decoder) or a script of the repository (e.g. tools/x.py)")
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


def maker_of(recipe: Recipe, item: Path) -> Stage | None:
    """The first stage whose outputs hold ``item`` (the output itself or a path inside it)."""
    for stage in recipe.stages:
        for out in stage.outputs:
            if item == out or out in item.parents:
                return stage
    return None

