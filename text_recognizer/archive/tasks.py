"""Inputs -> one task per page, and where each page's and each file's outputs go.

Why: a task is the unit of work, of failure and of resumption, so it must be a page (a 400-page PDF should not be
read again because its last page failed) and have a stable name across runs. Names are paths relative to the
inputs' common folder, so ``box1/letter.pdf`` and ``box2/letter.pdf`` never overwrite each other's outputs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from text_recognizer.inputs import ResolvedInputs, resolve_inputs
from text_recognizer.page_files import FILE_FORMATS, page_file_suffixes
from text_recognizer.page_formats import XML_FORMATS

#: Formats a batch run writes: ``json`` always (it is how a page counts as done), the others on request.
BATCH_FORMATS = ("json", *XML_FORMATS, *FILE_FORMATS)
_SUFFIXES = {"json": ".json", "page": ".xml", "alto": ".xml", "pdf": ".pdf", "hocr": ".hocr"}


@dataclass(frozen=True)
class PageTask:
    """Page ``page`` (from 1; ``None`` for an image, or a PDF that could not be opened) of ``file``; ``key`` is the
    file's path relative to the inputs' common folder, without its suffix."""

    file: str
    key: str
    page: int | None = None

    @property
    def id(self) -> str:
        """The task's stable name: ``box1/letter.pdf#page=3`` or ``box1/scan.png``."""
        name = self.key + Path(self.file).suffix
        return name if self.page is None else f"{name}#page={self.page}"

    def output(self, out: Path, fmt: str) -> Path:
        """Where this page's ``fmt`` output goes (``json``, ``page``, ``alto``): ``out/<fmt>/<key>[_pageNNNN]``."""
        stem = self.key if self.page is None else f"{self.key}_page{self.page:04d}"
        return out / fmt / f"{stem}{_SUFFIXES[fmt]}"

    def as_row(self) -> dict:
        return {**asdict(self), "page": -1 if self.page is None else self.page}

    @classmethod
    def from_row(cls, row: dict) -> PageTask:
        page = int(row["page"])
        return cls(str(row["file"]), str(row["key"]), None if page < 0 else page)


def file_output(out: Path, key: str, fmt: str) -> Path:
    """Where a whole file's ``fmt`` output goes (``pdf``, ``hocr``): ``out/<fmt>/<key>.<fmt>``."""
    return out / fmt / f"{key}{_SUFFIXES[fmt]}"


def read_list(path: Path) -> list[str]:
    """The paths in a list file: one per line; blank lines and ``#`` comments skipped; relative to the file."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            entries.append(line if os.path.isabs(line) else str(path.parent / line))
    return entries


def plan(inputs: Sequence[str], lists: Sequence[Path] = ()) -> tuple[list[PageTask], ResolvedInputs]:
    """Every page of every page image and PDF that ``inputs`` (files, folders, searched with their subfolders, and
    glob patterns) and the list files name, in order; and the inputs' problems (a missing file, an empty folder).
    A PDF that cannot be opened becomes one task, which fails with the reason when it runs."""
    from text_recognizer.pdf import is_pdf
    from text_recognizer.pdf.pages import PdfError, page_count

    names = [*inputs, *(entry for path in lists for entry in read_list(Path(path)))]
    resolved = resolve_inputs(names, recursive=True, suffixes=page_file_suffixes())
    if not resolved.files:
        return [], resolved
    absolute = [file.resolve() for file in resolved.files]
    root = Path(os.path.commonpath([path.parent for path in absolute]))
    tasks: list[PageTask] = []
    for file, path in zip(resolved.files, absolute):
        key = path.relative_to(root).with_suffix("").as_posix()
        if not is_pdf(path):
            tasks.append(PageTask(str(file), key))
            continue
        try:
            count = page_count(path)
        except (PdfError, ImportError):
            tasks.append(PageTask(str(file), key))
            continue
        tasks.extend(PageTask(str(file), key, number) for number in range(1, count + 1))
    return tasks, resolved
