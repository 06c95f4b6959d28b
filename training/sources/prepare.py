"""Turn a fetched source into training data: lines cut and labelled by the guideline, split by document.

Why: the recognizer trains on ``labels.tsv`` folders, the segmenter on PAGE/ALTO page folders, the language models on
text; all three must agree on which pages are validation, or a validation page leaks into training through one of
them. Writes, under ``<root>/prepared/<name>/``:

- ``train/`` and ``val/``: line images (grey, ``height`` pixels high) with a ``labels.tsv`` (``file``, ``text``,
  ``document``, ``page``); texts normalised by :mod:`training.sources.transcription`;
- ``pages/train/`` and ``pages/val/``: each page's XML with its image beside it (a hard link where the disk allows),
  for ``text-recognizer-train-segmenter``;
- ``PREPARED.json``: the commit, the split (which documents are val), counts of pages, lines and hands, every line
  left out with its reason, every page whose image the snapshot lacks.

The split is by document (a manuscript's folder, or a page where the manifest says documents are pages): documents
are ordered by the SHA-256 of ``<source>:<document>`` and the first ``val_fraction`` of them are val, so the split is
the same on every machine and a document never straddles it; adding a document moves no other. ``val_documents``
in the manifest pins the val documents by name instead (a source with its own split).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from text_recognizer.data.folder import open_image
from text_recognizer.data.linecut import cut_line, page_gray, polygon_problem
from training.sources.fetch import RECORD, raw_folder, read_record
from training.sources.manifest import Source
from training.sources.transcription import normalise

PREPARED = "PREPARED.json"
SPLITS = ("train", "val")


class PrepareError(RuntimeError):
    """A source cannot be prepared: not fetched, fetched at another commit, no page readable."""


@dataclass
class PageJob:
    """One page to cut: its XML, its image (None when the snapshot lacks it), its document and split."""

    xml: Path
    image: Path | None
    name: str  # a file-system-safe name, unique in the source
    document: str
    split: str


@dataclass
class PageResult:
    name: str
    split: str
    rows: list[tuple[str, str]] = field(default_factory=list)  # (file, text)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (line id, reason)


def prepared_folder(root: Path, source: Source) -> Path:
    return root / "prepared" / source.name


def document_of(xml_path: str, source: Source) -> str:
    """The document a page belongs to: its folder (the one above ``alto/``/``page/`` copies), or the page itself."""
    parts = xml_path.split("/")
    if source.document == "page":
        return xml_path.rsplit(".", 1)[0]
    folder = parts[:-1]
    if folder and folder[-1].lower() in ("alto", "page", "xml"):
        folder = folder[:-1]
    return "/".join(folder) or "."


def split_documents(documents: list[str], source: Source) -> dict[str, str]:
    """``document -> "train"|"val"``: the manifest's ``val_documents``, else the first ``val_fraction`` by hash."""
    if source.val_documents:
        unknown = sorted(set(source.val_documents) - set(documents))
        if unknown:
            raise PrepareError(f"{source.name}: val_documents not in the source: {unknown}")
        return {d: "val" if d in source.val_documents else "train" for d in documents}
    ordered = sorted(documents, key=lambda d: hashlib.sha256(f"{source.name}:{d}".encode()).hexdigest())
    n_val = 0 if source.val_fraction == 0 or len(ordered) < 2 else max(1, round(source.val_fraction * len(ordered)))
    return {d: "val" if i < n_val else "train" for i, d in enumerate(ordered)}


def _safe(text: str) -> str:
    keep = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in text)
    return keep.strip("_")[:90] or "page"


def _find_image(layout) -> Path | None:
    """The page image: where ``PageLayout.image_candidates`` looks (beside the XML), then one folder up (sources keep
    their XML in ``alto/`` or ``page/`` below the images): by the named file's bare name, or any image with the XML's
    stem."""
    up = layout.path.parent.parent
    candidates = layout.image_candidates()
    if layout.image_name:
        candidates.append(up / Path(layout.image_name.replace("\\", "/")).name)
    candidates += sorted(p for p in up.glob("*") if p.stem == layout.path.stem and p.suffix.lower() != ".xml")
    return next((p for p in candidates if p.is_file()), None)


def plan_pages(source: Source, raw: Path) -> tuple[list[PageJob], dict[str, str]]:
    """Every XML page of the fetched files, with its image, document and split."""
    from text_recognizer.data.layout import LayoutError, read_layout

    record = read_record(raw)
    if record is None:
        raise PrepareError(f"{source.name}: not fetched (no {raw / RECORD}); run: text-recognizer-data fetch "
                           f"{source.name}")
    if record["commit"] != source.commit:
        raise PrepareError(f"{source.name}: fetched at {record['commit'][:8]}, the manifest pins "
                           f"{source.commit[:8]}; fetch it again")
    xmls = sorted(f for f in record["files"] + record["missing"] if f.lower().endswith(".xml"))
    present = set(record["files"])
    jobs = []
    for name in xmls:
        if name not in present:
            continue
        try:
            layout = read_layout(raw / name)
        except LayoutError:
            image = None
        else:
            image = _find_image(layout)
        jobs.append(PageJob(raw / name, image, _safe(name.rsplit(".", 1)[0].replace("/", "__")),
                            document_of(name, source), ""))
    splits = split_documents(sorted({j.document for j in jobs}), source)
    for job in jobs:
        job.split = splits[job.document]
    return jobs, splits


def cut_page(job: PageJob, out: Path, height: int, source: Source) -> PageResult:
    """Cut one page's lines into ``out/<split>/`` and link the page into ``out/pages/<split>/``."""
    from text_recognizer.data.layout import LayoutError, read_layout

    result = PageResult(job.name, job.split)
    try:
        layout = read_layout(job.xml)
    except LayoutError as error:
        result.left_out.append((job.name, f"page unreadable: {error}"))
        return result
    if job.image is None:
        result.left_out += [(f"{job.name}#{line.id}", "page image missing from the snapshot") for line in layout.lines]
        return result
    try:
        gray = page_gray(open_image(job.image))
    except (OSError, ValueError) as error:
        result.left_out += [(f"{job.name}#{line.id}", f"page image unreadable: {error}") for line in layout.lines]
        return result
    size = (gray.shape[1], gray.shape[0])
    for number, line in enumerate(layout.lines):
        outcome = normalise(line.text or "", leave_out=source.leave_out, replace=source.replace)
        reason = outcome.reason or line.polygon_error or polygon_problem(line.polygon, size)
        if reason is None:
            try:
                cut = cut_line(gray, line.polygon, line.baseline)  # type: ignore[arg-type]
            except ValueError as error:
                reason = f"bad polygon: {error}"
        if reason is not None:
            result.left_out.append((f"{job.name}#{line.id}", reason))
            continue
        if height and cut.height != height:
            width = max(1, round(cut.width * height / cut.height))
            cut = cut.resize((width, height), Image.Resampling.LANCZOS, reducing_gap=2.0)
        file = f"{job.name}__{number:04d}.png"
        cut.save(out / job.split / file, optimize=False)
        result.rows.append((file, outcome.text))  # type: ignore[arg-type]
    pages = out / "pages" / job.split
    image_name = f"{job.name}{job.image.suffix.lower()}"
    _write_layout_naming(layout, image_name, pages / f"{job.name}.xml")
    _link(job.image, pages / image_name)
    return result


def _write_layout_naming(layout, image_name: str, destination: Path) -> None:
    """Copy a PAGE/ALTO file with its image reference set to ``image_name`` (pages of many folders share one)."""
    root = layout.tree.getroot()
    if layout.format == "page":
        for page in root.iter("{*}Page"):
            page.set("imageFilename", image_name)
    else:
        for element in root.iter("{*}fileName"):
            element.text = image_name
    layout.tree.write(str(destination), encoding="utf-8", xml_declaration=True)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def prepare_source(source: Source, root: Path, height: int = 64, workers: int = 1) -> dict:
    """Prepare one fetched source into ``<root>/prepared/<name>/`` (replaced whole, atomically); returns the report."""
    raw = raw_folder(root, source)
    jobs, splits = plan_pages(source, raw)
    record = read_record(raw) or {}
    target = prepared_folder(root, source)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{source.name}-"))
    try:
        for split in SPLITS:
            (work / split).mkdir()
            (work / "pages" / split).mkdir(parents=True)
        if workers > 1:
            with ProcessPoolExecutor(workers) as pool:
                results = list(pool.map(cut_page, jobs, [work] * len(jobs), [height] * len(jobs),
                                        [source] * len(jobs), chunksize=1))
        else:
            results = [cut_page(job, work, height, source) for job in jobs]
        report = _report(source, record, jobs, splits, results)
        document = {job.name: job.document for job in jobs}
        for split in SPLITS:
            rows = [f"{file}\t{text}\t{document[r.name]}\t{r.name}"
                    for r in results if r.split == split for file, text in r.rows]
            header = "file\ttext\tdocument\tpage\n"
            (work / split / "labels.tsv").write_text(header + "".join(f"{row}\n" for row in rows), encoding="utf-8")
        (work / PREPARED).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _report(source: Source, record: dict, jobs: list[PageJob], splits: dict[str, str],
            results: list[PageResult]) -> dict:
    reasons = Counter(reason.split(":")[0] if not reason.startswith("outside") else "outside the alphabet"
                      for r in results for _, reason in r.left_out)
    pages_missing = [str(j.xml) for j in jobs if j.image is None]
    lines = {split: sum(len(r.rows) for r in results if r.split == split) for split in SPLITS}
    chars = {split: sum(len(t) for r in results if r.split == split for _, t in r.rows) for split in SPLITS}
    return {
        "source": source.name, "repository": source.repository, "commit": source.commit, "licence": source.licence,
        "language": source.language, "xml_sha256": record.get("xml_sha256", ""),
        "files_missing_from_snapshot": len(record.get("missing", [])),
        "pages": len(jobs), "pages_without_image": len(pages_missing),
        "documents": {split: sorted(d for d, s in splits.items() if s == split) for split in SPLITS},
        "pages_by_split": {split: sum(1 for j in jobs if j.split == split and j.image) for split in SPLITS},
        "lines": lines, "characters": chars,
        "left_out": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
        "left_out_lines": [[line, reason] for r in results for line, reason in r.left_out],
        "missing_pages": pages_missing,
    }


def prepare_folder_report(source: Source, report: dict) -> str:
    """One Markdown table row of a ``PREPARED.json`` report."""
    docs = report["documents"]
    pages = report["pages_by_split"]
    centuries = ", ".join(f"{c}th" for c in source.centuries)
    return (f"| {source.name} | {source.licence} | {source.language} | {centuries} | {len(docs['train'])} / "
            f"{len(docs['val'])} | {pages['train'] + pages['val']} | {report['lines']['train']:,} / "
            f"{report['lines']['val']:,} | {sum(report['left_out'].values()):,} | {report['pages_without_image']} |")
