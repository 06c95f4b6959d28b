"""The data model of a training recipe (docs/recipe.md): stages, their kinds, expected times and command lines.

Apart from the YAML reading (training/recipe/load.py), the plan (training/recipe/plan.py) and the runner
(training/recipe/runner.py) so that all of them share one definition of what a stage is and how its commands read,
and import it one way only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RECIPES = Path(__file__).resolve().parents[1] / "recipes"
DEFAULT_ROOT = Path("training") / "logs"  # as training.loop.run_setup.LOG_ROOT: relative to the working directory
STATE_DIR = ".recipe"
BUILTINS = ("work", "repo")

#: The fields every stage takes; KINDS: the kinds of stage, the fields each takes besides these, and how it runs.
COMMON_FIELDS = {"name", "kind", "note", "expected", "inputs", "outputs", "cwd"}
KINDS: dict[str, dict[str, Any]] = {
    "fetch": {"fields": {"out", "fonts", "copies", "include", "packages", "files"}, "required": {"out"}},
    "pack": {"fields": {"args"}, "required": {"args"}, "module": "training.sources.pack_folder", "process": True},
    "train": {"fields": {"args", "run_dir", "init_from"}, "required": {"args", "run_dir"}},
    "average": {"fields": {"args"}, "required": {"args"}, "module": "training.release.average_checkpoints"},
    "lm": {"fields": {"args"}, "required": {"args"}, "module": "training.decoder.build_lm"},
    "export": {"fields": {"args"}, "required": {"args"}, "module": "training.release.export_model"},
    "tune": {"fields": {"args"}, "required": {"args"}, "program": True, "process": True},
    "data": {"fields": {"args"}, "required": {"args"}, "module": "training.sources.cli", "process": True},
}


def is_script(program: str) -> bool:
    """Whether a ``tune`` stage's program is a script path of the repository (``*.py``), not a module name."""
    return program.endswith(".py")


def is_module_name(program: str) -> bool:
    """Whether ``program`` reads as a dotted module name (``training.decoder``), run with ``python -m``."""
    return all(part.isidentifier() for part in program.split("."))


def program_command(program: str, arguments: list[str]) -> list[str]:
    """The command line of a ``tune`` stage's run: ``python REPO/script.py ...`` or ``python -m module ...``."""
    if is_script(program):
        return [sys.executable, str(REPO / program), *arguments]
    return [sys.executable, "-m", program, *arguments]


def program_missing(program: str) -> str | None:
    """Why a ``tune`` stage's program cannot run here (a script not under the repository, a module not
    importable), or ``None``."""
    if is_script(program):
        return None if (REPO / program).is_file() else f"{program}: not found under {REPO}"
    try:
        found = importlib.util.find_spec(program) is not None
    except ImportError:  # a parent package is missing
        found = False
    return None if found else f"{program}: no such module (python -m {program})"


class RecipeError(ValueError):
    """The recipe is malformed, cannot run as asked, or a stage failed; the message says which and why."""


@dataclass(frozen=True)
class Expected:
    """How long a stage took (or is estimated to take) on one machine."""

    minutes: float
    machine: str
    estimate: bool = False

    def describe(self) -> str:
        return f"{'~' if self.estimate else ''}{minutes_text(self.minutes)} on {self.machine}" + (
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
        if spec.get("program"):
            return [shlex.join(["python", *(run if is_script(run[0]) else ["-m", *run])]) for run in self.runs]
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


def train_argv(stage: Stage, resume: bool) -> list[str]:
    """``run_experiment.py``'s arguments for a train stage: its args, the run directory, the start weights, and
    ``--resume`` when the run directory holds a ``last.pt`` (the same flags: the trainer checks they match)."""
    argv = [*stage.runs[0], "--run-dir", str(stage.run_dir)]
    if stage.init_from is not None:
        argv += ["--init-from", str(stage.init_from)]
    return argv + (["--resume"] if resume else [])


def minutes_text(minutes: float) -> str:
    """A duration as the plan and the progress lines print it: seconds under a minute, hours past ninety."""
    if minutes >= 90:
        return f"{minutes:,.0f} min ({minutes / 60:.1f} h)"
    if minutes >= 10:
        return f"{minutes:.0f} min"
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    return f"{minutes:.1f}".removesuffix(".0") + " min"


def shown(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` (the work directory) where it is inside, so messages stay short; else whole."""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)

