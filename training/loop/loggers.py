"""Where a run's numbers go. The trainer calls every logger; ``JsonlLogger`` is always on.

A logger may raise ``KeyboardInterrupt`` from ``log_train`` to stop a run cleanly at that step
(the trainer then saves ``last.pt``), the same as Ctrl-C.
"""

from __future__ import annotations

import json
from pathlib import Path


class Logger:
    """Base class with no-op hooks; subclasses override what they need."""

    def start(self, config: dict, run_dir: Path, model_info: dict) -> None: ...

    def watch(self, model) -> None:
        """Called once with the model before training starts (e.g. to track its gradients)."""

    def log_train(self, step: int, metrics: dict) -> None: ...

    def log_val(self, epoch: int, step: int, metrics: dict, samples: list[dict]) -> None: ...

    def log_checkpoint(self, path: Path, is_best: bool, metrics: dict) -> None: ...

    def log_event(self, step: int, event: dict) -> None: ...

    def finish(self, summary: dict) -> None: ...


class JsonlLogger(Logger):
    """Appends one JSON object per record to ``<run_dir>/metrics.jsonl`` (the run's own history)."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / "metrics.jsonl"

    def _write(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def log_train(self, step: int, metrics: dict) -> None:
        self._write({"kind": "train", "step": step, **metrics})

    def log_val(self, epoch: int, step: int, metrics: dict, samples: list[dict]) -> None:
        self._write({"kind": "val", "epoch": epoch, "step": step, **metrics})

    def log_event(self, step: int, event: dict) -> None:
        self._write({"kind": "event", "step": step, **event})
