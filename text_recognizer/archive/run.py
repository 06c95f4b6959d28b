"""A batch run: the pages not yet done, read on Ray Data (or in this process), recorded as they arrive, then each
file's whole-file outputs (searchable PDF, hOCR) written from its pages' results.

Why Ray Data: it streams tasks to a pool of actors, one model each, on this machine or a cluster, keeps them busy
and restarts a crashed one. The trap on a small machine: actors holding every CPU leave none for Ray Data's read
tasks, and the run hangs. Here the pages are in-memory items (no read task waits for a CPU), so the pool may take
every CPU, which is also fastest (``default_workers``); a test runs such a pool to the end.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from text_recognizer.archive.ledger import Ledger, done_tasks
from text_recognizer.archive.tasks import PageTask, file_output
from text_recognizer.archive.worker import PageWorker
from text_recognizer.page_files import FILE_FORMATS, write_atomically
from text_recognizer.page_formats import XML_FORMATS
from text_recognizer.progress import progress_bar


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_workers(cpus: int | None = None) -> tuple[int, int]:
    """``(actors, torch threads each)`` for this machine: an actor per CPU, one thread each. Measured on 2 CPUs
    (benchmarks/results/batch.md): 2 actors x 1 thread read 50 pages in 30.9 s of run, 1 actor x 2 threads in 41.7 s
    (a two-thread actor loses more to Ray's own processes than two one-thread actors do)."""
    return (cpus or available_cpus()), 1


@dataclass
class Summary:
    """How a run went: pages in all, done by earlier runs, read now, failed now, and its seconds."""

    pages: int = 0
    done_before: int = 0
    read: int = 0
    failed: int = 0
    seconds: float = 0.0
    failures: list[dict] = field(default_factory=list)


@dataclass
class BatchSettings:
    """What the workers need: output folder and formats, ``LineRecognizer`` options, the page reader's options,
    and how many workers (None: :func:`default_workers`) on which Ray (``address``; None: start one here)."""

    out: Path
    formats: tuple[str, ...] = ("json",)
    recognizer: dict = field(default_factory=dict)
    segmenter: str | None = None
    dpi: float | None = None
    max_pixels: int | None = None
    min_confidence: float | None = None
    workers: int | None = None
    threads: int | None = None
    address: str | None = None
    executor: str = "ray"
    gpus: float | None = None  # GPUs Ray reserves per actor

    def worker_kwargs(self, threads: int, run: str) -> dict:
        return {"out": str(self.out), "formats": tuple(f for f in self.formats if f in XML_FORMATS),
                "recognizer": self.recognizer, "segmenter": self.segmenter, "threads": threads, "dpi": self.dpi,
                "max_pixels": self.max_pixels, "min_confidence": self.min_confidence, "run": run}


def run_batch(tasks: list[PageTask], settings: BatchSettings, progress: bool = True) -> Summary:
    """Read every task not done yet, record each, then write the whole-file outputs. Resumable: call again with
    the same tasks and output folder after a crash, and only what is missing or failed is read."""
    started = time.perf_counter()
    ledger = Ledger(settings.out)
    done = done_tasks(tasks, settings.out)
    _recover(ledger, tasks, done)
    todo = [task for task in tasks if task.id not in done]
    summary = Summary(pages=len(tasks), done_before=len(done))
    run = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    records = _local_records(todo, settings, run) if settings.executor == "local" else \
        _ray_records(todo, settings, run)
    with progress_bar(len(todo), progress, unit="page") as bar:
        for record in records:
            ledger.append([record])
            if record["status"] == "ok":
                summary.read += 1
            else:
                summary.failed += 1
                summary.failures.append(record)
                bar.write(f"failed: {record['id']}: {record['error']}", file=sys.stderr)
            bar.update()
    _file_outputs(tasks, settings)
    summary.seconds = time.perf_counter() - started
    return summary


def _recover(ledger: Ledger, tasks: list[PageTask], done: set[str]) -> None:
    """Manifest lines for pages whose result is on disk but whose line a crash kept from being written."""
    recorded = {record.get("id") for record in ledger.records() if record.get("status") == "ok"}
    missing = [task for task in tasks if task.id in done and task.id not in recorded]
    ledger.append({"id": task.id, "file": task.file, "page": task.page, "status": "ok",
                   "error": "recovered: the result was on disk, its manifest line was not"} for task in missing)


def _local_records(todo: list[PageTask], settings: BatchSettings, run: str) -> Iterator[dict]:
    if not todo:
        return
    threads = settings.threads or available_cpus()
    worker = PageWorker(**settings.worker_kwargs(threads, run))
    for task in todo:
        yield worker.read(task)


def _ray_records(todo: list[PageTask], settings: BatchSettings, run: str) -> Iterator[dict]:
    """The records of ``todo`` as Ray Data's actors finish them (in any order)."""
    if not todo:
        return
    import ray

    _quiet_ray()
    if not ray.is_initialized():
        ray.init(address=settings.address, include_dashboard=False, logging_level="ERROR",
                 log_to_driver=False, configure_logging=True)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # ours counts pages
    context.print_on_execution_start = False
    cpus = int(ray.cluster_resources().get("CPU", available_cpus()))
    workers, threads = default_workers(cpus)
    workers, threads = settings.workers or workers, settings.threads or threads
    dataset = ray.data.from_items([task.as_row() for task in todo], override_num_blocks=min(len(todo), 2000))
    pool = ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=2)
    pages = dataset.map_batches(PageWorker, fn_constructor_kwargs=settings.worker_kwargs(threads, run),
                                batch_size=1, compute=pool, num_cpus=1, num_gpus=settings.gpus)
    for row in pages.iter_rows():
        record = dict(row)
        record["page"] = None if record.get("page") in (None, -1) else int(record["page"])
        yield record


def _quiet_ray() -> None:
    """Ray's own chatter off the terminal (our bar counts pages; failures are in the manifest; Ray's logs keep the
    rest): Ray Data's per-run INFO lines and warnings, and the C++ core's notes, unless the user set their level."""
    import logging

    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    import ray.data  # noqa: F401 - configures its loggers, which are then turned down

    for name in list(logging.root.manager.loggerDict):
        if name.startswith("ray.data"):
            logging.getLogger(name).setLevel(logging.ERROR)


def _file_outputs(tasks: list[PageTask], settings: BatchSettings) -> None:
    """Whole-file outputs (searchable PDF, hOCR) for every file whose pages are all done, and per-page XML a run
    with other formats left out, written from the pages' JSON results."""
    if not any(f in XML_FORMATS or f in FILE_FORMATS for f in settings.formats):
        return  # JSON only: the workers wrote everything
    from text_recognizer.page_formats import render
    from text_recognizer.page_result import PageResult

    by_file: dict[str, list[PageTask]] = {}
    for task in tasks:
        by_file.setdefault(task.file, []).append(task)
    for file, pages in by_file.items():
        results = []
        for task in pages:
            try:
                results.append(PageResult.from_dict(json.loads(task.output(settings.out, "json").read_bytes())))
            except (OSError, ValueError):
                results.append(None)
        for task, result in zip(pages, results):
            for fmt in (f for f in settings.formats if f in XML_FORMATS):
                if result is not None and not task.output(settings.out, fmt).exists():
                    write_atomically(task.output(settings.out, fmt), render(result, fmt))
        if any(result is None for result in results):
            continue  # not every page is read yet: the next run writes the file
        for fmt in (f for f in settings.formats if f in FILE_FORMATS):
            target = file_output(settings.out, pages[0].key, fmt)
            if not target.exists():
                write_atomically(target, _whole_file(fmt, file, pages, results))


def _whole_file(fmt: str, file: str, pages: list[PageTask], results: list) -> bytes:
    if fmt == "hocr":
        from text_recognizer.hocr import hocr

        return hocr([(result, task.page) for task, result in zip(pages, results)])
    from text_recognizer.pdf.text_layer import PageSource, searchable_pdf

    return searchable_pdf([(PageSource(Path(file), None if task.page is None else task.page - 1), result)
                           for task, result in zip(pages, results)])
