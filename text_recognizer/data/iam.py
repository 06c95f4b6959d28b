"""IAM Handwriting Database text lines: archives -> processed dataset folders (cached).

Inputs (``text_recognizer/data/metadata/iam.toml``; the FKI site needs registration, so a user normally
downloads them by hand and passes their folder as ``archives``):

- ``lines.tgz``: line images, ``lines/a01/a01-000u/a01-000u-00.png`` (members are matched by file
  name, so the leading folders do not matter);
- ``ascii.tgz``: ``ascii/lines.txt`` with one line per text line,
  ``a01-000u-00 ok 154 19 408 746 1661 89 A|MOVE|to|stop|Mr.|Gaitskell|from``
  (id, segmentation flag, grey level used to binarise the line, number of components, bounding
  box x y w h, transcription with ``|`` between words), and ``ascii/forms.txt``
  (``a01-000u 000 ...``: form id, writer id, ...);
- ``largeWriterIndependentTextLineRecognitionTask.zip``: ``trainset.txt``, ``validationset1.txt``,
  ``validationset2.txt``, ``testset.txt``, one line id per row (the official "large writer
  independent text line recognition" task; its writers are disjoint between the sets).

Output: ``<cache>/iam/lines_h<height>[_bin]/{train,val,test,train_extra}/`` in the folder format
(``<id>.png`` + ``labels.tsv`` with columns ``file text iam_id ok_flag width height``), the same
format as the development copy in ``../shared/data/iam``. ``val`` is validationset1 +
validationset2. ``train_extra`` holds lines that are in no official list and whose writer is in
neither ``val`` nor ``test`` (safe to add to training). Texts keep IAM's tokenisation (``|`` becomes a
space); the natural-spacing rule is applied at load time (``text_recognizer.data.tokenization``).

Line preprocessing: greyscale; pixels lighter than IAM's own binarisation threshold of the line
(the grey level in ``lines.txt``) become white paper, the ink keeps its grey levels (``binarize=True``
makes it pure black instead, like the development copy); then resize to ``height`` px, keeping the
aspect ratio. Processing happens once: a ``.complete`` marker with the settings is written last,
into a temporary folder that is renamed into place.

Command line: ``python -m text_recognizer.data.iam --archives DIR``.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tarfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
from PIL import Image

from text_recognizer.data.download import ChecksumError, DownloadError, cache_dir, fetch, load_metadata, metadata_path
from text_recognizer.metadata import LINE_HEIGHT

__all__ = ["IAMLine", "parse_lines_txt", "parse_forms_txt", "parse_split_list", "preprocess_line",
           "prepare_iam", "iam_dir", "SPLIT_FILES", "FOLDERS"]

#: Official task lists per output folder.
SPLIT_FILES: dict[str, tuple[str, ...]] = {
    "train": ("trainset.txt",),
    "val": ("validationset1.txt", "validationset2.txt"),
    "test": ("testset.txt",),
}
FOLDERS = ("train", "val", "test", "train_extra")
_HEADER = "file\ttext\tiam_id\tok_flag\twidth\theight\n"
_MARKER = ".complete"
_FORMAT_VERSION = 1


@dataclass(frozen=True)
class IAMLine:
    """One entry of ``ascii/lines.txt``."""

    id: str
    ok: str  # "ok" or "err": IAM's word-segmentation flag (does not affect the line)
    threshold: int  # grey level IAM used to binarise this line
    text: str  # IAM-tokenised transcription, words separated by single spaces

    @property
    def form(self) -> str:
        return self.id.rsplit("-", 1)[0]


def parse_lines_txt(text: str) -> dict[str, IAMLine]:
    """``ascii/lines.txt`` -> ``{line id: IAMLine}`` (``#`` comment lines are skipped)."""
    out: dict[str, IAMLine] = {}
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.strip() or row.startswith("#"):
            continue
        fields = row.split(" ")
        if len(fields) < 9:
            raise ValueError(f"lines.txt:{number}: expected at least 9 space-separated fields, got {row!r}")
        try:
            threshold = int(fields[2])
        except ValueError as error:
            raise ValueError(f"lines.txt:{number}: grey level {fields[2]!r} is not an integer") from error
        transcription = " ".join(fields[8:])
        words = [w for w in transcription.split("|")]
        out[fields[0]] = IAMLine(fields[0], fields[1], threshold, " ".join(words).strip())
    return out


def parse_forms_txt(text: str) -> dict[str, str]:
    """``ascii/forms.txt`` -> ``{form id: writer id}``."""
    out = {}
    for row in text.splitlines():
        if row.strip() and not row.startswith("#"):
            fields = row.split()
            if len(fields) >= 2:
                out[fields[0]] = fields[1]
    return out


def parse_split_list(text: str) -> list[str]:
    """A task list (one id per row) -> ids, blank rows and comments dropped."""
    return [row.strip() for row in text.splitlines() if row.strip() and not row.startswith("#")]


def preprocess_line(image: Image.Image, threshold: int | None, height: int, binarize: bool = False) -> Image.Image:
    """An IAM line scan -> mode "L", dark ink on white, ``height`` px high (aspect ratio kept)."""
    gray = np.asarray(image.convert("L"), dtype=np.uint8)
    if threshold is not None and 0 < threshold < 255:
        ink = gray < threshold
        gray = np.where(ink, 0 if binarize else gray, 255).astype(np.uint8)
    out = Image.fromarray(gray, mode="L")
    width = max(1, round(out.width * height / out.height))
    return out.resize((width, height), Image.Resampling.LANCZOS)


def iam_dir(height: int = LINE_HEIGHT, binarize: bool = False) -> Path:
    """Where ``prepare_iam`` puts the processed folders for these settings."""
    return cache_dir("iam", f"lines_h{height}{'_bin' if binarize else ''}")


def _members_by_name(tar: tarfile.TarFile) -> Iterable[tuple[str, tarfile.TarInfo]]:
    for member in tar:
        if member.isfile():
            yield PurePosixPath(member.name).name, member


def _read_ascii(path: Path) -> tuple[str, str | None]:
    lines_txt = forms_txt = None
    with tarfile.open(path, "r:*") as tar:
        for name, member in _members_by_name(tar):
            if name in ("lines.txt", "forms.txt"):
                data = tar.extractfile(member).read().decode("utf-8", errors="replace")  # type: ignore[union-attr]
                if name == "lines.txt":
                    lines_txt = data
                else:
                    forms_txt = data
    if lines_txt is None:
        raise ValueError(f"{path} has no lines.txt: is it IAM's ascii.tgz?")
    return lines_txt, forms_txt


def _read_splits(path: Path) -> dict[str, list[str]]:
    wanted = {name for names in SPLIT_FILES.values() for name in names}
    found: dict[str, list[str]] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = PurePosixPath(info.filename).name
            if name in wanted:
                found[name] = parse_split_list(archive.read(info).decode("utf-8", errors="replace"))
    missing = sorted(wanted - set(found))
    if missing:
        raise ValueError(f"{path} lacks {missing}: is it largeWriterIndependentTextLineRecognitionTask.zip?")
    return found


def _assign(lines: dict[str, IAMLine], lists: dict[str, list[str]], writers: dict[str, str] | None) -> dict[str, str]:
    """``{line id: folder}`` from the task lists (entries may be line ids or form ids)."""
    by_form: dict[str, list[str]] = {}
    for line_id, line in lines.items():
        by_form.setdefault(line.form, []).append(line_id)
    folder_of: dict[str, str] = {}
    for folder, files in SPLIT_FILES.items():
        for file in files:
            for entry in lists[file]:
                for line_id in [entry] if entry in lines else by_form.get(entry, []):
                    if line_id in folder_of and folder_of[line_id] != folder:
                        raise ValueError(f"line {line_id} is in both {folder_of[line_id]} and {folder}")
                    folder_of[line_id] = folder
    if writers is not None:
        held_out = {writers.get(lines[i].form) for i, f in folder_of.items() if f in ("val", "test")}
        for line_id, line in lines.items():
            writer = writers.get(line.form)
            if line_id not in folder_of and writer is not None and writer not in held_out:
                folder_of[line_id] = "train_extra"
    return folder_of


def prepare_iam(
    archives: str | Path | None = None,
    height: int = LINE_HEIGHT,
    binarize: bool = False,
    allow_unverified: bool = False,
    force: bool = False,
    progress: bool = True,
) -> dict[str, Path]:
    """Processed IAM folders ``{train, val, test, train_extra}`` (built on the first call, then cached).

    ``archives`` is a folder holding ``lines.tgz``, ``ascii.tgz`` and the split zip (or ``None``:
    look in the download cache, then download from the URLs in ``text_recognizer/data/metadata/iam.toml``).
    """
    out_dir = iam_dir(height, binarize)
    marker = out_dir / _MARKER
    if marker.is_file() and not force:
        return {name: out_dir / name for name in FOLDERS}
    meta = load_metadata(metadata_path("iam"))
    downloads = cache_dir("downloads", "iam")
    paths = {}
    for key in ("lines", "ascii", "splits"):
        try:
            paths[key] = fetch(meta[key], downloads, local=archives, allow_unverified=allow_unverified,
                               progress=progress)
        except DownloadError as error:
            if isinstance(error, ChecksumError):
                raise
            raise DownloadError(
                f"{error}\nIAM needs a (free, non-commercial) registration at "
                "https://fki.tic.heia-fr.ch/databases/iam-handwriting-database: download lines.tgz, ascii.tgz and "
                "largeWriterIndependentTextLineRecognitionTask.zip there and pass their folder with --iam-archives DIR"
            ) from error
    lines_txt, forms_txt = _read_ascii(paths["ascii"])
    lines = parse_lines_txt(lines_txt)
    writers = parse_forms_txt(forms_txt) if forms_txt else None
    if writers is None:
        print("warning: ascii.tgz has no forms.txt: train_extra stays empty (writers unknown)", file=sys.stderr)
    folder_of = _assign(lines, _read_splits(paths["splits"]), writers)

    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for name in FOLDERS:
        (tmp / name).mkdir(parents=True)
    rows: dict[str, list[str]] = {name: [] for name in FOLDERS}
    done = 0
    with tarfile.open(paths["lines"], "r:*") as tar:
        for name, member in _members_by_name(tar):
            line_id = PurePosixPath(name).stem
            folder = folder_of.get(line_id)
            if folder is None or not name.endswith(".png"):
                continue
            line = lines[line_id]
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            try:
                with Image.open(io.BytesIO(data)) as raw:
                    image = preprocess_line(raw, line.threshold, height, binarize)
            except (OSError, ValueError, SyntaxError) as error:
                print(f"warning: skipping unreadable {member.name}: {error}", file=sys.stderr)
                continue
            file = f"{line_id}.png"
            image.save(tmp / folder / file)
            rows[folder].append(f"{file}\t{line.text}\t{line_id}\t{line.ok}\t{image.width}\t{image.height}\n")
            done += 1
            if progress and done % 1000 == 0:
                print(f"  IAM: {done} lines processed", file=sys.stderr)
    counts = {}
    for name in FOLDERS:
        (tmp / name / "labels.tsv").write_text(_HEADER + "".join(sorted(rows[name])), encoding="utf-8")
        counts[name] = len(rows[name])
    missing = sum(1 for f in folder_of if f) - done
    info = {"format": _FORMAT_VERSION, "height": height, "binarize": binarize, "counts": counts,
            "lines_in_lists_without_image": max(0, missing)}
    (tmp / _MARKER).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    if progress:
        print(f"IAM ready in {out_dir}: {counts}", file=sys.stderr)
    return {name: out_dir / name for name in FOLDERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Process IAM text lines into dataset folders (cached).")
    parser.add_argument("--archives", type=Path, default=None,
                        help="folder with lines.tgz, ascii.tgz and largeWriterIndependentTextLineRecognitionTask.zip "
                             "(default: download)")
    parser.add_argument("--height", type=int, default=LINE_HEIGHT, help="line height in pixels")
    parser.add_argument("--binarize", action="store_true",
                        help="pure black ink (like the development copy) instead of grey")
    parser.add_argument("--allow-unverified", action="store_true", help="accept archives whose sha256 is not recorded")
    parser.add_argument("--force", action="store_true", help="rebuild even if a processed copy exists")
    args = parser.parse_args(argv)
    try:
        folders = prepare_iam(args.archives, args.height, args.binarize, args.allow_unverified, args.force)
    except (DownloadError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, path in folders.items():
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
