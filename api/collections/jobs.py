"""Adapting the served model to a collection in the background: fine-tuning on its corrected lines as a job in
its own process, one at a time per server, with a time budget, progress, a kept log and cancel.

Why a process: training takes minutes of both cores and must not stall the event loop or the inference pool;
``text-recognizer-train --finetune`` (``python -m training.run_experiment``) is the same command a user runs, so
what the browser starts is what the docs measure (its held-out comparison and ``verdict.json`` included). The
service never imports ``training``: it starts it by module name, and says so (501) where it is not installed
(the Docker image serves only).

Jobs are rows of the collections database. A server that stops while a job runs leaves it ``failed`` ("the
server restarted") at its next start, never half-written: the job's process is stopped then too, and its run
folder is the fine-tuning run's own (``best.pt`` only ever written whole by the trainer).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from pathlib import Path

from api.collections.exports import labels_zip
from api.collections.store import CollectionStore, NotFound

SCHEMA = """CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, collection_id TEXT NOT NULL, state TEXT NOT NULL,
    minutes REAL NOT NULL, lines INTEGER NOT NULL, pid INTEGER, created REAL NOT NULL, finished REAL,
    error TEXT, result TEXT);
"""
#: Fewer corrected lines than this cannot teach a hand anything (fine-tuning's own minimum).
MIN_LINES = 10
MAX_MINUTES = 120.0


class JobBusy(RuntimeError):
    """Another adaptation runs on this server."""


class JobsUnavailable(RuntimeError):
    """This server cannot train (the ``training`` package is not installed beside the service)."""


class AdaptJobs:
    """The adaptation jobs of one store; ``checkpoint``: the served model, the parent of every adaptation."""

    def __init__(self, store: CollectionStore, checkpoint: Path):
        self.store, self.checkpoint = store, Path(checkpoint)
        self.root = store.root / "jobs"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._running: dict[str, subprocess.Popen] = {}
        self._cancelled: set[str] = set()
        with store.transaction() as db:
            db.execute(SCHEMA)
            left = db.execute("SELECT id, pid FROM jobs WHERE state = 'running'").fetchall()
            for row in left:  # this server's predecessor stopped while they ran
                self._stop_orphan(row["id"], row["pid"])
                db.execute("UPDATE jobs SET state = 'failed', finished = ?, error = ? WHERE id = ?",
                           (time.time(), "the server stopped while the job ran; start it again", row["id"]))

    def _stop_orphan(self, job_id: str, pid: int | None) -> None:
        """SIGTERM a job process the last server left running (only if it is that job's: its command line names
        the job's run folder, so a reused pid is left alone)."""
        if not pid:
            return
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return
        if str(self.root / job_id) in command:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass

    def start(self, owner: str, collection_id: str, minutes: float) -> dict:
        """Export the collection's corrected lines and start fine-tuning on them; the job as ``job`` returns it."""
        if importlib.util.find_spec("training") is None:
            raise JobsUnavailable("this server cannot train: the training package is not installed beside it "
                                  "(pip install the repository, not only the service)")
        if not 0 < minutes <= MAX_MINUTES:
            raise ValueError(f"minutes must be more than 0 and at most {MAX_MINUTES:g}, got {minutes:g}")
        lines = [line for _, line in self.store.corrected_lines(owner, collection_id) if line["text"]]
        if len(lines) < MIN_LINES:
            raise ValueError(f"the collection has {len(lines)} corrected lines; adapting needs at least {MIN_LINES}")
        with self._lock:
            if any(process.poll() is None for process in self._running.values()):
                raise JobBusy("another adaptation is running on this server; wait for it or cancel it")
            job_id = uuid.uuid4().hex
            folder = self.root / job_id
            with zipfile.ZipFile(io.BytesIO(labels_zip(self.store, owner, collection_id))) as archive:
                archive.extractall(folder)
            with self.store.transaction() as db:
                db.execute("INSERT INTO jobs (id, owner, collection_id, state, minutes, lines, created) "
                           "VALUES (?, ?, ?, 'running', ?, ?, ?)",
                           (job_id, owner, collection_id, minutes, len(lines), time.time()))
            command = [sys.executable, "-m", "training.run_experiment", "--finetune", str(self.checkpoint),
                       "--data", str(folder / "lines"), "--run-dir", str(folder / "run"), "--max-minutes",
                       f"{minutes:g}", "--progress", "false"]
            with (folder / "log.txt").open("wb") as log:
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self._running[job_id] = process
            with self.store.transaction() as db:
                db.execute("UPDATE jobs SET pid = ? WHERE id = ?", (process.pid, job_id))
        threading.Thread(target=self._wait, args=(job_id, process), daemon=True).start()
        return self.job(owner, collection_id, job_id)

    def _wait(self, job_id: str, process: subprocess.Popen) -> None:
        code = process.wait()
        folder = self.root / job_id
        verdict_path = folder / "run" / "finetune" / "verdict.json"
        result = verdict_path.read_text(encoding="utf-8") if verdict_path.is_file() else None
        if job_id in self._cancelled:
            state, error = "cancelled", None
        elif code == 0 and result is not None:
            state, error = "done", None
        else:
            state, error = "failed", f"fine-tuning exited with status {code}: see the log"
        with self.store.transaction() as db:
            db.execute("UPDATE jobs SET state = ?, finished = ?, error = ?, result = ? WHERE id = ?",
                       (state, time.time(), error, result, job_id))
        with self._lock:
            self._running.pop(job_id, None)

    def job(self, owner: str, collection_id: str, job_id: str) -> dict:
        """The job: ``state`` (running, done, failed, cancelled), budget, lines, progress (steps so far, the
        last validation CER), the log's last lines, and when done the verdict (which model to use) and the
        adapted checkpoint."""
        with self.store.transaction(write=False) as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ? AND owner = ? AND collection_id = ?",
                             (job_id, owner, collection_id)).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id!r} in collection {collection_id!r}")
        folder = self.root / job_id
        out = {"id": row["id"], "collection_id": collection_id, "state": row["state"], "minutes": row["minutes"],
               "lines": row["lines"], "created": row["created"], "finished": row["finished"], "error": row["error"],
               "progress": _progress(folder / "run" / "metrics.jsonl"), "log": _tail(folder / "log.txt")}
        if row["result"]:
            verdict = json.loads(row["result"])
            out["verdict"] = verdict
            out["checkpoint"] = verdict["fine_tuned"] if verdict.get("use") == "fine_tuned" else None
        return out

    def jobs(self, owner: str, collection_id: str) -> list[dict]:
        with self.store.transaction(write=False) as db:
            rows = db.execute("SELECT id FROM jobs WHERE owner = ? AND collection_id = ? ORDER BY created",
                              (owner, collection_id)).fetchall()
        return [self.job(owner, collection_id, row["id"]) for row in rows]

    def cancel(self, owner: str, collection_id: str, job_id: str) -> dict:
        """Stop a running job (SIGTERM: the trainer stops at its next step and keeps its checkpoints)."""
        job = self.job(owner, collection_id, job_id)
        with self._lock:
            process = self._running.get(job_id)
            if job["state"] == "running" and process is not None and process.poll() is None:
                self._cancelled.add(job_id)
                os.killpg(process.pid, signal.SIGTERM)
        return self.job(owner, collection_id, job_id)

    def close(self) -> None:
        """Stop running jobs (the server is shutting down); their rows say so at the next start."""
        with self._lock:
            for process in self._running.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)


def _progress(metrics: Path) -> dict:
    step, val_cer = 0, None
    if metrics.is_file():
        for line in metrics.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line being written
                continue
            step = max(step, int(record.get("step", 0)))
            if record.get("kind") == "val" and record.get("val_cer") is not None:
                val_cer = record["val_cer"]
    return {"step": step, "val_cer": val_cer}


def _tail(log: Path, lines: int = 20) -> list[str]:
    if not log.is_file():
        return []
    return log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
