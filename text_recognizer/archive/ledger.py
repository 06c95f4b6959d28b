"""What a batch run has done: the per-page JSON results on disk are the truth, the manifest is the record.

Why two: a page's JSON is written atomically (a temporary file renamed into place) by the worker that read it, so a
page is done exactly when its JSON is there, whatever happened to the run after; the manifest (``manifest.jsonl``,
one line per page attempt: page, status, seconds, lines, mean confidence, error) is appended by the driver as
results arrive, each line flushed to disk, for people and tools to read. A run killed between the two loses
nothing: the next run finds the JSON, counts the page as done and writes its missing manifest line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from text_recognizer.archive.tasks import PageTask

#: The fields of every manifest line, in order.
RECORD_KEYS = ("id", "file", "page", "status", "seconds", "lines", "mean_confidence", "error", "worker", "run")


def done_tasks(tasks: Iterable[PageTask], out: Path) -> set[str]:
    """The ids of ``tasks`` whose JSON result is on disk and whole."""
    done = set()
    for task in tasks:
        path = task.output(out, "json")
        try:
            json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        done.add(task.id)
    return done


class Ledger:
    """``out/manifest.jsonl``: read what earlier runs recorded, and append this run's records."""

    def __init__(self, out: Path):
        self.path = out / "manifest.jsonl"
        out.mkdir(parents=True, exist_ok=True)

    def records(self) -> list[dict]:
        """Every whole line recorded so far (a line torn by a crash is skipped)."""
        if not self.path.exists():
            return []
        records = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return records

    def append(self, records: Iterable[dict]) -> None:
        """Append ``records`` and make them durable before returning."""
        lines = "".join(json.dumps({key: record.get(key) for key in RECORD_KEYS}, ensure_ascii=False) + "\n"
                        for record in records)
        if not lines:
            return
        with open(self.path, "a", encoding="utf-8") as handle:
            if handle.tell() > 0 and not self._ends_with_newline():
                handle.write("\n")  # a line torn by a crash stays alone on its line
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"
