"""A folder of page images with PAGE-XML or ALTO files as a line dataset, with a cache of cut lines.

Why: people who segment and transcribe with kraken, eScriptorium or Transkribus export pages, not
line images. ``--data FOLDER`` accepts such a folder (``*.xml`` files and their images, no
``labels.tsv``): each transcribed line is cut out (``text_recognizer.data.linecut``) once and stored
as a PNG in a cache folder named after the SHA-256 of the XML file, its image and the cutting
version, with a ``lines.json`` manifest. Later runs (and DataLoader workers) read the cut lines like
any folder dataset; editing a transcription or an image changes the hash, so the page is cut again.

Lines are reported and skipped when they have no text, no usable polygon, or their page image is
missing or unreadable; whole files when they are not PAGE/ALTO. The report reuses the categories
of ``text_recognizer.data.checks`` (no text -> "empty label", geometry and image problems ->
"unreadable image", with the reason), so ``--bad-samples error`` stops on them as for any folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from text_recognizer.codec import Codec
from text_recognizer.data.checks import POLICIES, DataCheckError, DataReport, check_records
from text_recognizer.data.download import cache_dir
from text_recognizer.data.folder import LABELS_FILE, LineRecord, open_image
from text_recognizer.data.linecut import cut_line, page_gray, polygon_problem
from text_recognizer.models.line_cnn import WindowGeometry
from text_recognizer.normalization import normalizer

if TYPE_CHECKING:
    from text_recognizer.data.layout import PageLayout

#: Bump when cutting changes (masking, deskewing, file format): old cache entries are then ignored.
CUT_VERSION = 1

#: eScriptorium/CREMMA's crossed-out marks: ``>words<`` (readable) and ``><`` (unreadable).
_CROSSED_OUT = re.compile(r">[^<>]*<")


def crossed_out_as_hash(text: str) -> str:
    """``text`` with each crossed-out span (``>words<`` or ``><``) written as IAM writes a crossed-out word, ``#``.

    Why: the marks are a transcription convention, not ink; learned as characters, a model would write ``>`` and
    ``<`` around words. IAM labels the same thing (struck-through or unreadable words) with ``#``, so both data
    sources teach one output for it, and a reading never holds the marks.
    """
    return _CROSSED_OUT.sub("#", text)
MANIFEST = "lines.json"


@dataclass
class CutLines:
    """What cutting a layout folder gave: line records (cached PNGs) and ``(line, reason)`` problems."""

    records: list[LineRecord] = field(default_factory=list)
    empty: list[tuple[str, str]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    pages: int = 0
    cached_pages: int = 0


def is_layout_folder(folder: str | Path) -> bool:
    """A folder without ``labels.tsv`` that holds ``*.xml`` files: PAGE/ALTO pages."""
    folder = Path(folder)
    return folder.is_dir() and not (folder / LABELS_FILE).exists() and any(folder.glob("*.xml"))


def _sha256(*paths: Path) -> str:
    digest = hashlib.sha256(f"cut-v{CUT_VERSION}".encode())
    for path in paths:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80] or "line"


def _cut_page(layout: PageLayout, image_path: Path, target: Path) -> dict:
    """Cut every transcribed line of one page into ``target``; return the manifest."""
    page = page_gray(open_image(image_path))
    height, width = page.shape
    lines, problems = [], []
    for number, line in enumerate(layout.lines):
        if line.text is None or not line.text.strip():
            problems.append({"id": line.id, "kind": "empty", "reason": "line has no text"})
            continue
        reason = line.polygon_error or polygon_problem(line.polygon, (width, height))
        if reason is None:
            try:
                cut = cut_line(page, line.polygon, line.baseline)  # type: ignore[arg-type]
            except ValueError as error:
                reason = str(error)
        if reason is not None:
            problems.append({"id": line.id, "kind": "unreadable", "reason": f"bad polygon: {reason}"})
            continue
        file = f"{number:05d}_{_safe(line.id)}.png"
        cut.save(target / file)
        lines.append({"id": line.id, "file": file, "text": line.text})
    return {"version": CUT_VERSION, "xml": str(layout.path), "image": str(image_path), "lines": lines,
            "problems": problems}


def _cached_page(layout: PageLayout, image_path: Path, cache_root: Path) -> tuple[Path, dict, bool]:
    """The cache folder and manifest of a page, cutting it first if needed (atomic rename)."""
    folder = cache_root / _sha256(layout.path, image_path)[:24]
    manifest_path = folder / MANIFEST
    if manifest_path.is_file():
        try:
            return folder, json.loads(manifest_path.read_text(encoding="utf-8")), True
        except (OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)  # a damaged entry: cut again
    cache_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=cache_root, prefix=".cutting-"))
    try:
        manifest = _cut_page(layout, image_path, work)
        (work / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        try:
            os.replace(work, folder)
        except OSError:  # another process cut the same page first: use theirs
            if not manifest_path.is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder, manifest, False


def cut_layout_folder(folder: str | Path, cache_root: str | Path | None = None,
                      normalize: Callable[[str], str] | None = None) -> CutLines:
    """Cut (or load from the cache) every transcribed line of the PAGE/ALTO files in ``folder``.

    ``cache_root`` defaults to ``<data cache>/page_lines`` (``$TEXT_RECOGNIZER_DATA`` or
    ``~/.cache/text_recognizer``). ``normalize`` maps each text (e.g. Unicode NFC) before use.
    """
    from text_recognizer.data.layout import LayoutError, read_layout  # lxml: needed only when pages are read

    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"layout folder {folder} does not exist or is not a directory")
    cache_root = Path(cache_root) if cache_root is not None else cache_dir("page_lines")
    normalize = normalize or normalizer("NFC")
    result = CutLines()
    for xml in sorted(folder.glob("*.xml")):
        try:
            layout = read_layout(xml)
        except LayoutError as error:
            result.unreadable.append((str(xml), str(error)))
            continue
        result.pages += 1
        image_path = layout.find_image()
        if image_path is None:
            names = ", ".join(str(p) for p in layout.image_candidates()) or "none named"
            for line in layout.lines:
                result.unreadable.append((f"{xml}#{line.id}", f"page image missing (looked for {names})"))
            continue
        try:
            cache, manifest, cached = _cached_page(layout, image_path, cache_root)
        except ValueError as error:  # the page image cannot be decoded
            for line in layout.lines:
                result.unreadable.append((f"{xml}#{line.id}", f"page image unreadable: {error}"))
            continue
        result.cached_pages += cached
        for line in manifest["lines"]:
            result.records.append(LineRecord(cache / line["file"], normalize(crossed_out_as_hash(line["text"]))))
        for problem in manifest["problems"]:
            items = result.empty if problem["kind"] == "empty" else result.unreadable
            items.append((f"{xml}#{problem['id']}", problem["reason"]))
    if result.pages == 0 and not result.unreadable:
        raise ValueError(f"layout folder {folder} holds no PAGE or ALTO files (*.xml)")
    return result


def check_layout_folder(folder: str | Path, codec: Codec, geometry: WindowGeometry, height: int,
                        policy: str = "skip", cache_root: str | Path | None = None,
                        normalize: Callable[[str], str] | None = None) -> DataReport:
    """Cut a layout folder's lines, then check them like folder data; the page problems join the report.

    With ``policy="error"`` any problem (in the XML or in the cut lines) raises ``DataCheckError``.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    cut = cut_layout_folder(folder, cache_root, normalize)
    report = check_records(cut.records, codec, geometry, height, policy="skip")
    report.empty_labels[:0] = cut.empty
    report.unreadable[:0] = cut.unreadable
    if policy == "error" and report.num_skipped:
        raise DataCheckError("dataset check failed (use --bad-samples skip to drop them):\n" + report.summary())
    return report
