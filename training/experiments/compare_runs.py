"""Compare training runs from their own files, no W&B account needed.

    python -m training.experiments.compare_runs training/logs                       # every run under a folder
    python -m training.experiments.compare_runs RUN_DIR RUN_DIR ... --plot cmp.png  # chosen runs
    python -m training.experiments.compare_runs training/logs --group optimizers --format markdown

Reads each run directory's ``config.json`` (with the changes of any ``--resume`` from
``config_overrides.jsonl``), ``metrics.jsonl`` and (when the run finished) ``summary.json``; prints
one row per run sorted by best validation CER, with the config values that differ between the runs,
and writes a PNG with validation CER per epoch (and the smoothed training loss) of every run.
Unfinished runs are shown from their ``metrics.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from training.loop.run_files import OVERRIDES_FILE  # each --resume's changes

# Config values that differ between runs without being a choice worth comparing.
IGNORED_KEYS = {
    "run.name",
    "run.run_dir",
    "run.group",
    "run.resume",
    "run.progress",
    "run.checkpoint_every",
    "run.wandb",
    "run.wandb_project",
    "run.wandb_samples",
    "data.num_workers",
    "codec",
    "data_description",
}


@dataclass
class Run:
    path: Path
    config: dict
    summary: dict | None
    train: list[dict] = field(default_factory=list)
    val: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def group(self) -> str:
        return str(self.config.get("run", {}).get("group", "") or "")

    @property
    def best_cer(self) -> float | None:
        if self.summary and self.summary.get("best_val_cer") is not None:
            return float(self.summary["best_val_cer"])
        values = [r["val_cer"] for r in self.val if r.get("val_cer") is not None]
        return min(values) if values else None

    @property
    def status(self) -> str:
        if self.summary is None:
            return "unfinished"
        return "done"

    def steps_per_epoch(self) -> float | None:
        """From the first validation after a whole epoch (step / epoch is exact there)."""
        for record in self.val:
            if record.get("epoch", 0) >= 1:
                return record["step"] / record["epoch"]
        return None

    def val_curve(self, x: str = "epoch") -> tuple[list[float], list[float], str]:
        """(x, val CER, x label): fractional epochs where the epoch length is known, else steps;
        with ``x="minutes"`` the run's elapsed wall-clock minutes (training + validation)."""
        if x == "minutes":
            rows = [r for r in self.val if "elapsed_minutes" in r]
            return [r["elapsed_minutes"] for r in rows], [r["val_cer"] for r in rows], "minutes since the run started"
        per_epoch = self.steps_per_epoch()
        xs = [r["step"] / per_epoch if per_epoch else r["step"] for r in self.val]
        return xs, [r["val_cer"] for r in self.val], "epoch" if per_epoch else "step"

    def train_curve(self, window: int = 10, x: str = "epoch") -> tuple[list[float], list[float]]:
        per_epoch = self.steps_per_epoch()
        train = [r for r in self.train if "elapsed_minutes" in r] if x == "minutes" else self.train
        losses = [r["loss"] for r in train]
        smoothed = []
        for i in range(len(losses)):
            chunk = [v for v in losses[max(0, i - window + 1) : i + 1] if math.isfinite(v)]
            smoothed.append(sum(chunk) / len(chunk) if chunk else float("nan"))
        if x == "minutes":
            return [r["elapsed_minutes"] for r in train], smoothed
        return [r["step"] / per_epoch if per_epoch else r["step"] for r in train], smoothed


def _with_resume_overrides(path: Path, config: dict) -> dict:
    """``config.json`` is the configuration a run started with; each ``--resume`` may have changed a few
    fields since (its budget, say), recorded in ``config_overrides.jsonl``: apply them in order."""
    history = path / OVERRIDES_FILE
    for line in history.read_text(encoding="utf-8").splitlines() if history.exists() else []:
        for change in json.loads(line)["overrides"].values():
            section, name = change["field"].split(".", 1)
            config.setdefault(section, {})[name] = change["given"]
    return config


def flatten(config: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def load_run(path: Path) -> Run:
    path = Path(path)
    config = _with_resume_overrides(path, json.loads((path / "config.json").read_text(encoding="utf-8")))
    summary_path = path / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else None
    run = Run(path, config, summary)
    metrics = path / "metrics.jsonl"
    if metrics.exists():
        for line in metrics.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash
            if record.get("kind") == "train":
                run.train.append(record)
            elif record.get("kind") == "val":
                run.val.append(record)
    return run


def find_runs(paths: list[str | Path]) -> list[Run]:
    """Run directories (holding ``config.json``) given directly or found below the given folders."""
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        if (path / "config.json").is_file():
            found[path.resolve()] = None
            continue
        for config in sorted(path.rglob("config.json")):
            if "wandb" not in config.relative_to(path).parts:
                found[config.parent.resolve()] = None
    return [load_run(p) for p in found]


def differing_keys(runs: list[Run]) -> list[str]:
    """Flattened config keys whose values are not the same in every run.

    A key missing from some runs (a setting added after they were made) counts as differing and
    shows as ``-``: the older runs may have behaved differently, which a comparison should show.
    """
    flats = [flatten(r.config) for r in runs]
    keys = dict.fromkeys(k for flat in flats for k in flat)
    out = []
    for key in keys:
        if key in IGNORED_KEYS or any(key.startswith(k + ".") for k in IGNORED_KEYS):
            continue
        values = {json.dumps(flat.get(key, "<missing>"), sort_keys=True) for flat in flats}
        if len(values) > 1:
            out.append(key)
    return out


def _short(keys: list[str]) -> dict[str, str]:
    """``optim.optimizer`` -> ``optimizer`` unless two keys would share the short name."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (s if last.count(s) == 1 else k) for k, s in zip(keys, last)}


def _fmt(value, spec: str = "") -> str:
    if value is None:
        return "-"
    if spec and isinstance(value, (int, float)):
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 100 else f"{value:.1f}"
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def table_rows(runs: list[Run]) -> tuple[list[str], list[list[str]]]:
    keys = differing_keys(runs) if len(runs) > 1 else []
    short = _short(keys)
    header = [
        "run",
        "best val CER",
        "best epoch",
        "final CER",
        "final WER",
        "steps",
        "minutes",
        "lines/s",
        "params",
        "status",
    ]
    if any(r.group for r in runs):
        header.insert(1, "group")
    header += [short[k] for k in keys]
    rows = []
    for run in runs:
        s = run.summary or {}
        last_val = run.val[-1] if run.val else {}
        row = [
            run.name,
            _fmt(run.best_cer),
            _fmt(s.get("best_epoch")),
            _fmt(s.get("final_val_cer", last_val.get("val_cer"))),
            _fmt(s.get("final_val_wer", last_val.get("val_wer"))),
            _fmt(s.get("steps", run.train[-1]["step"] if run.train else None)),
            _fmt(s.get("elapsed_minutes"), ".1f"),
            _fmt(s.get("train_lines_per_sec"), ".1f"),
            _fmt(s.get("parameters")),
            run.status,
        ]
        if "group" in header:
            row.insert(1, run.group or "-")
        flat = flatten(run.config)
        rows.append(row + [_fmt(flat.get(k)) for k in keys])
    return header, rows


def format_table(header: list[str], rows: list[list[str]], style: str = "text") -> str:
    if style == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    if style == "csv":
        import csv
        import io

        buffer = io.StringIO()
        csv.writer(buffer).writerows([header, *rows])
        return buffer.getvalue().rstrip("\n")
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def sort_runs(runs: list[Run]) -> list[Run]:
    """Best validation CER first; runs without a validation last (then by name)."""
    return sorted(runs, key=lambda r: (r.best_cer is None, r.best_cer if r.best_cer is not None else 0.0, r.name))


def plot_runs(runs: list[Run], path: str | Path, title: str = "", x: str = "epoch") -> Path:
    """Validation CER (left) and smoothed training loss (right) of every run against epochs or
    minutes (``x``), as a PNG. Runs logged before ``elapsed_minutes`` existed have no minutes curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_cer, ax_loss) = plt.subplots(1, 2, figsize=(12, 4.5))
    x_label = "epoch"
    for run in runs:
        xs, cers, x_label = run.val_curve(x)
        label = f"{run.name} (best {run.best_cer:.3f})" if run.best_cer is not None else run.name
        (line,) = ax_cer.plot(xs, cers, marker="o", markersize=3, label=label)
        tx, losses = run.train_curve(x=x)
        ax_loss.plot(tx, losses, color=line.get_color(), label=run.name, linewidth=1)
    ax_cer.set(xlabel=x_label, ylabel="validation CER", title="validation CER (lower is better)")
    ax_loss.set(xlabel=x_label, ylabel="train loss (moving average of 10 steps)", title="training loss")
    for ax in (ax_cer, ax_loss):
        ax.grid(alpha=0.3)
    ax_cer.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compare_runs.py",
        description=(
            "Table (sorted by best val CER, with the config values that differ) and a PNG plot of val CER"
            " per epoch for training runs."
        ),
    )
    parser.add_argument(
        "paths", nargs="+", help="run directories, or folders to search for run directories (holding config.json)"
    )
    parser.add_argument("--group", default="", help="only runs of this --group")
    parser.add_argument("--format", choices=("text", "markdown", "csv"), default="text", help="table format")
    parser.add_argument("--plot", default="compare_runs.png", help="where to write the PNG plot")
    parser.add_argument("--no-plot", action="store_true", help="do not write a plot")
    parser.add_argument("--title", default="", help="plot title")
    parser.add_argument(
        "--x",
        choices=("epoch", "minutes"),
        default="epoch",
        help="plot against epochs or wall-clock minutes since each run started",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        runs = find_runs(args.paths)
    except (FileNotFoundError, json.JSONDecodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.group:
        runs = [r for r in runs if r.group == args.group]
    if not runs:
        print(
            f"error: no runs (directories with config.json) found in {' '.join(args.paths)}"
            + (f" with group {args.group!r}" if args.group else ""),
            file=sys.stderr,
        )
        return 1
    runs = sort_runs(runs)
    print(format_table(*table_rows(runs), style=args.format))
    if not args.no_plot:
        path = plot_runs(runs, args.plot, args.title, args.x)
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
