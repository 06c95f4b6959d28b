"""One model reading pages: a Ray actor in a batch run (one per worker process), or an object in this process.

Why a class: the model, its decoder and the segmenter are loaded once per process and then read page after page.
Each page is read and written on its own: a page that cannot be opened, rendered or read becomes a ``failed``
record with the reason and the next page goes on. Its outputs are written atomically, the JSON last: the JSON is
what marks the page done (:mod:`text_recognizer.archive.ledger`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from text_recognizer.archive.ledger import RECORD_KEYS
from text_recognizer.archive.tasks import PageTask
from text_recognizer.page_files import write_atomically


class PageWorker:
    """``worker(batch)`` -> records, for Ray Data's ``map_batches`` (a dict of columns in, a dict of columns out);
    ``worker.read(task)`` -> one record.

    ``out``: the output folder; ``formats``: per-page formats besides json (``page``, ``alto``); ``recognizer``:
    ``LineRecognizer`` keyword arguments (checkpoint, decoder, language, ...); ``threads``: torch threads in this
    process; ``dpi``: PDF rendering (None: the scan's own); ``run``: this run's name, kept in each record.
    """

    def __init__(self, out: str, formats: tuple[str, ...] = (), recognizer: dict | None = None,
                 segmenter: str | None = None, threads: int | None = None, dpi: float | None = None,
                 max_pixels: int | None = None, min_confidence: float | None = None, run: str = ""):
        import torch

        from text_recognizer.page_reader import MAX_PAGE_PIXELS, PageReader
        from text_recognizer.recognizer import LineRecognizer
        from text_recognizer.segmentation.choose import load_segmenter

        if threads:
            torch.set_num_threads(threads)
        options = {} if min_confidence is None else {"min_confidence": min_confidence}
        self.reader = PageReader(LineRecognizer(**(recognizer or {})), segmenter=load_segmenter(segmenter),
                                 max_pixels=max_pixels or MAX_PAGE_PIXELS, **options)
        self.out, self.formats, self.dpi, self.run = Path(out), tuple(formats), dpi, run

    def __call__(self, batch: dict) -> dict:
        rows = [dict(zip(batch, values)) for values in zip(*batch.values())]
        records = [self.read(PageTask.from_row(row)) for row in rows]
        return {key: [record[key] for record in records] for key in RECORD_KEYS}

    def read(self, task: PageTask) -> dict:
        """Read ``task``'s page and write its outputs; the record says how it went (never raises for a bad page)."""
        started = time.perf_counter()
        record = {"id": task.id, "file": task.file, "page": task.page, "worker": os.getpid(), "run": self.run,
                  "lines": None, "mean_confidence": None, "error": None}
        try:
            result = self._read(task)
            self._write(task, result)
        except Exception as error:  # noqa: BLE001 - any failure of this page is recorded, the run goes on
            message = str(error) or type(error).__name__
            return {**record, "status": "failed", "error": message, "seconds": time.perf_counter() - started}
        confidences = [line.confidence for line in result.lines if line.confidence is not None]
        return {**record, "status": "ok", "seconds": round(time.perf_counter() - started, 3),
                "lines": len(result.lines),
                "mean_confidence": round(sum(confidences) / len(confidences), 4) if confidences else None}

    def _read(self, task: PageTask):
        from dataclasses import replace

        from text_recognizer.pdf import is_pdf
        from text_recognizer.pdf.pages import page_count, render_pdf_page

        if not is_pdf(task.file):
            return self.reader.read(task.file, name=task.id)
        if task.page is None:
            page_count(task.file)  # raises the reason it cannot be opened
            raise ValueError(f"{task.file}: the PDF could not be counted")  # pragma: no cover - opened after all
        rendered = render_pdf_page(task.file, task.page, self.dpi, self.reader.max_pixels)
        if rendered.error is not None:
            raise ValueError(rendered.error)
        return replace(self.reader.read(rendered.image, name=task.id), page=task.page)

    def _write(self, task: PageTask, result) -> None:
        from text_recognizer.page_formats import render

        for fmt in self.formats:
            write_atomically(task.output(self.out, fmt), render(result, fmt))
        data = json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")
        write_atomically(task.output(self.out, "json"), data)  # last: the page is done
