"""Turn an experiment spec (YAML or JSON) into ``run_experiment.py`` commands, and optionally run them.

    python -m training.experiments.prepare_experiment training/experiments/optimizers.yaml  # print the commands
    python -m training.experiments.prepare_experiment SPEC --output runs.sh  # write them to a file
    python -m training.experiments.prepare_experiment SPEC --run  # run them one after another
    python -m training.experiments.prepare_experiment SPEC --run -- --wandb --device cpu  # extra flags for every run

A spec holds a ``base`` config (flags shared by every run) and its variations: a ``grid`` (every
combination of the listed values) and/or a list of ``runs`` (each a dict of flags, optionally with
its own ``name``); with both, every listed run is combined with every grid point. Keys are
``run_experiment.py`` flag names with ``-`` or ``_``; values are scalars, booleans or lists::

    name: optimizers            # prefix of every run name; also the default group
    group: optimizers-v1        # optional W&B / compare_runs group (default: name)
    log_root: training/logs     # optional: run directories go to <log_root>/<run name>
    base: {height: 32, max_steps: 90, synthetic_train_lines: 120}
    grid: {optimizer: [rmsprop, adam, adamw]}

Each run is named ``<name>-<key>-<value>_...`` from the keys that vary (a readable, file-safe name)
and gets ``--group``. ``--run`` continues past a failed run and ends by listing the failures
(exit status 1 if any failed); runs whose directory already holds a ``summary.json`` are skipped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_EXPERIMENT = Path(__file__).resolve().parents[1] / "run_experiment.py"
DEFAULT_LOG_ROOT = Path("training") / "logs"  # as training.loop.run_setup.LOG_ROOT: relative to the working directory
_RESERVED = {"name", "group", "run_dir"}  # set by the spec itself, not per-run flags


class SpecError(ValueError):
    """The experiment spec is malformed; the message names the key and what was expected."""


@dataclass
class PlannedRun:
    name: str
    group: str
    flags: dict
    run_dir: Path | None

    def argv(self, python: str = sys.executable, extra: list[str] | None = None) -> list[str]:
        args = [python, str(_display_path(RUN_EXPERIMENT)), f"--name={self.name}", f"--group={self.group}"]
        if self.run_dir is not None:
            args.append(f"--run-dir={self.run_dir}")
        for key, value in self.flags.items():
            args.extend(_flag_args(key, value))
        return args + list(extra or [])


def _display_path(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _flag_args(key: str, value) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if isinstance(value, bool):
        return [f"{flag}={'true' if value else 'false'}"]
    if isinstance(value, (list, tuple)):
        return [flag, *(str(v) for v in value)]
    return [f"{flag}={value}"]


def _slug(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "x".join(_slug(v) for v in value)
    if isinstance(value, float):
        value = f"{value:g}"
    return re.sub(r"[^A-Za-z0-9.+-]+", "", str(value)) or "empty"


def known_flags() -> set[str]:
    """Flag names (without ``--``, with ``_``) that ``run_experiment.py`` accepts."""
    from training.loop.config import build_parser

    names = set()
    for action in build_parser()._actions:
        for option in action.option_strings:
            if option.startswith("--"):
                names.add(option[2:].replace("-", "_"))
    return names


def load_spec(path: str | Path) -> dict:
    """Read a YAML (``.yaml``/``.yml``) or JSON spec file into a dict."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"spec file {path} does not exist")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        spec = json.loads(text)
    else:
        import yaml

        spec = yaml.safe_load(text)
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a mapping with 'base' and 'grid' and/or 'runs', got {type(spec).__name__}")
    spec.setdefault("name", path.stem)
    return spec


def _normalise(section: str, flags, allowed: set[str]) -> dict:
    if flags is None:
        return {}
    if not isinstance(flags, dict):
        raise SpecError(f"spec '{section}' must be a mapping of flag -> value, got {type(flags).__name__}")
    out = {}
    for key, value in flags.items():
        name = str(key).lstrip("-").replace("-", "_")
        if name not in allowed:
            raise SpecError(f"spec '{section}': unknown flag {key!r} (not a run_experiment.py flag)")
        if name in _RESERVED:
            raise SpecError(f"spec '{section}': {key!r} is set by the spec ('name', 'group', 'log_root'), not per run")
        out[name] = value
    return out


def plan_runs(spec: dict, allowed: set[str] | None = None) -> list[PlannedRun]:
    """Expand a spec into one ``PlannedRun`` per combination, with readable unique names."""
    allowed = allowed if allowed is not None else known_flags()
    unknown_keys = set(spec) - {"name", "group", "log_root", "base", "grid", "runs", "description"}
    if unknown_keys:
        raise SpecError(f"unknown spec keys {sorted(unknown_keys)}; "
                        "expected name, group, log_root, base, grid, runs, description")
    prefix = _slug(spec.get("name") or "exp")
    group = str(spec.get("group") or prefix)
    base = _normalise("base", spec.get("base"), allowed)
    grid = _normalise("grid", spec.get("grid"), allowed)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SpecError(f"spec 'grid': {key!r} must be a non-empty list of values, got {values!r}")
    listed = spec.get("runs") or [{}]
    if not isinstance(listed, list):
        raise SpecError(f"spec 'runs' must be a list of mappings, got {type(listed).__name__}")
    variations = []
    for i, item in enumerate(listed):
        if not isinstance(item, dict):
            raise SpecError(f"spec 'runs'[{i}] must be a mapping, got {item!r}")
        item = dict(item)
        own_name = item.pop("name", None)
        run_flags = _normalise(f"runs[{i}]", item, allowed)
        for point in itertools.product(*grid.values()):
            variations.append((own_name, {**run_flags, **dict(zip(grid.keys(), point))}))
    # Keys whose value differs between runs name the run (a single run is named by its prefix alone).
    varying = [k for k in dict.fromkeys(k for _, v in variations for k in v)
               if len({json.dumps(v.get(k, base.get(k)), sort_keys=True) for _, v in variations}) > 1]
    log_root = Path(spec["log_root"]) if spec.get("log_root") else None
    runs, seen = [], set()
    for own_name, flags in variations:
        if own_name:
            parts = [_slug(own_name)]
        else:
            parts = [f"{k.replace('_', '-')}-{_slug(flags[k])}" for k in varying if k in flags]
        name = "-".join([prefix, "_".join(parts)]) if parts else prefix
        if name in seen:
            raise SpecError(f"two runs would both be named {name!r}; give the listed runs distinct 'name's")
        seen.add(name)
        runs.append(PlannedRun(name, group, {**base, **flags}, log_root / name if log_root else None))
    return runs


def run_all(runs: list[PlannedRun], extra: list[str], skip_done: bool = True) -> dict[str, list[str]]:
    """Run each command in turn, continuing past failures; return names by outcome."""
    outcome: dict[str, list[str]] = {"ok": [], "failed": [], "skipped": []}
    for i, run in enumerate(runs, 1):
        run_dir = run.run_dir or (DEFAULT_LOG_ROOT / run.name).absolute()
        if skip_done and (run_dir / "summary.json").exists():
            print(f"[{i}/{len(runs)}] {run.name}: already done ({run_dir / 'summary.json'}), skipped", flush=True)
            outcome["skipped"].append(run.name)
            continue
        argv = run.argv(sys.executable, extra)
        print(f"[{i}/{len(runs)}] {run.name}: {shlex.join(argv)}", flush=True)
        start = time.monotonic()
        try:
            rc = subprocess.run(argv, cwd=REPO).returncode
        except OSError as error:
            print(f"[{i}/{len(runs)}] {run.name}: could not start: {error}", file=sys.stderr)
            rc = -1
        minutes = (time.monotonic() - start) / 60
        if rc == 0:
            outcome["ok"].append(run.name)
            print(f"[{i}/{len(runs)}] {run.name}: done in {minutes:.1f} min", flush=True)
        else:
            outcome["failed"].append(run.name)
            print(f"[{i}/{len(runs)}] {run.name}: FAILED (exit status {rc}) after {minutes:.1f} min; continuing",
                  flush=True)
    return outcome


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prepare_experiment.py",
        description="Print (or run) one run_experiment.py command per run of an experiment spec (YAML or JSON).",
        epilog="Arguments after '--' are appended to every command (e.g. -- --wandb --device cpu).",
    )
    parser.add_argument("spec", help="experiment spec: a .yaml/.yml or .json file with base and grid and/or runs")
    parser.add_argument("--output", "-o", default="",
                        help="write the commands to this file (one per line) instead of printing them")
    parser.add_argument("--run", action="store_true",
                        help="run the commands one after another (continues past failures)")
    parser.add_argument("--rerun-done", action="store_true",
                        help="with --run: also rerun runs whose directory already holds summary.json")
    parser.add_argument("--python", default="python",
                        help="interpreter named in printed or written commands (--run uses the current one)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    try:
        runs = plan_runs(load_spec(args.spec))
    except (SpecError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.run:
        outcome = run_all(runs, extra, skip_done=not args.rerun_done)
        print(f"{len(outcome['ok'])} ok, {len(outcome['skipped'])} skipped, {len(outcome['failed'])} failed"
              + (f": {', '.join(outcome['failed'])}" if outcome["failed"] else ""))
        return 1 if outcome["failed"] else 0
    lines = [shlex.join(run.argv(args.python, extra)) for run in runs]
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(lines)} commands to {args.output}")
    else:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
