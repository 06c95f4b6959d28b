"""What a recipe run would do, before it does it: which stages are done (their done-markers), which are selected,
which inputs are missing and how long it is expected to take; ``--dry-run`` prints it, the runner acts on it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from training.recipe.load import maker_of
from training.recipe.spec import (
    BUILTINS,
    KINDS,
    Recipe,
    RecipeError,
    Stage,
    minutes_text,
    program_missing,
    shown,
    train_argv,
)

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


def attempts_path(recipe: Recipe, stage: Stage) -> Path:
    return recipe.state / f"{stage.name}.attempts.json"


def record_attempt(recipe: Recipe, stage: Stage, seconds: float) -> dict:
    path = attempts_path(recipe, stage)
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
            text = f"done in {minutes_text(self.done.get('wall_seconds', 0) / 60)}"
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
        gone = [shown(p, recipe.work) for p in stage.outputs if done is not None and not p.exists()]
        steps.append(Step(stage, stage.index in chosen, done, [],
                          changed=done is not None and done.get("fingerprint") != stage.fingerprint(), gone=gone))
    for step in steps:
        if not step.selected or step.done is not None:
            continue
        if step.stage.kind == "train":
            check_train_args(step.stage)
        if KINDS[step.stage.kind].get("program"):
            step.missing += [why for why in map(program_missing, (run[0] for run in step.stage.runs)) if why]
        for item in step.stage.inputs:
            if item.exists():
                continue
            maker = maker_of(recipe, item)
            if maker is None:
                step.missing.append(f"{shown(item, recipe.work)}: made by no stage and not on disk")
            elif steps[maker.index].done is not None:
                step.missing.append(f"{shown(item, recipe.work)}: stage {maker.name} made it and is marked done, but "
                                    f"it is gone: delete {shown(marker(recipe, maker), recipe.work)} to make it again")
            elif not steps[maker.index].selected:
                step.missing.append(f"{shown(item, recipe.work)}: made by stage {maker.name}, which has not run "
                                    "and is not part of this run")
    return steps


def describe_plan(recipe: Recipe, steps: list[Step]) -> str:
    lines = [f"recipe {recipe.name} ({shown(recipe.path, Path.cwd())}): {len(recipe.stages)} stages, "
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
    lines += ["", f"expected in all: {minutes_text(total)}, each stage on the machine it was "
                  f"measured on (the first time listed); {minutes_text(estimated)} of it estimated, not measured",
              f"left to run in this selection: {minutes_text(todo)}; done: {sum(s.done is not None for s in steps)} "
              f"of {len(steps)} stages"]
    return "\n".join(lines)


def _totals(steps: list[Step]) -> tuple[float, float, float]:
    total = sum(s.stage.expected[0].minutes for s in steps)
    todo = sum(s.stage.expected[0].minutes for s in steps if s.selected and s.done is None)
    estimated = sum(s.stage.expected[0].minutes for s in steps if s.stage.expected[0].estimate)
    return total, todo, estimated


# ---------------------------------------------------------------------------------------------------- train stages


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise RecipeError(message)


def check_train_args(stage: Stage) -> None:
    """Parse a train stage's flags as ``run_experiment.py`` does and build its configuration, so that a typo in the
    last stage stops the recipe before the first one runs, not hours later."""
    from text_recognizer.codec import Codec
    from training.loop.config import add_config_arguments, config_from_args

    parser = _Parser(prog="run_experiment.py", add_help=False)
    add_config_arguments(parser)
    try:
        config_from_args(parser.parse_args(train_argv(stage, resume=False)), Codec().num_classes)
    except (ValueError, TypeError) as error:
        raise RecipeError(f"stage {stage.name}: run_experiment.py would refuse its args: {error}") from None

