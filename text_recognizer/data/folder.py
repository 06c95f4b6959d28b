"""A folder of line images with a ``labels.tsv``: the on-disk format of every real dataset.

``labels.tsv`` is UTF-8, tab-separated, with a header row that has at least the columns
``file`` and ``text`` (extra columns are allowed and ignored). There is **no CSV quoting**: a
text is everything in its column, verbatim, and may contain ``"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

LABELS_FILE = "labels.tsv"


class DatasetFormatError(ValueError):
    """A dataset folder or its labels file is malformed."""


@dataclass(frozen=True)
class LineRecord:
    """One labelled line: the image path and its transcription."""

    path: Path
    text: str


def read_labels(folder: str | Path) -> list[LineRecord]:
    """Parse ``folder/labels.tsv`` into records (images are not opened here)."""
    folder = Path(folder)
    labels = folder / LABELS_FILE
    if not folder.is_dir():
        raise DatasetFormatError(f"dataset folder {folder} does not exist or is not a directory")
    if not labels.is_file():
        raise DatasetFormatError(f"{labels} is missing: a dataset folder needs a labels.tsv (columns file, text)")
    try:
        # utf-8-sig: a leading byte-order mark (spreadsheet exports) is not part of the header.
        content = labels.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DatasetFormatError(f"{labels} is not valid UTF-8: {error}") from error
    # Rows end at "\n" (or "\r\n") only: str.splitlines() would also split a text at "\r",
    # "\x0c", "\x85", "\u2028" and other characters that belong to the text verbatim.
    lines = [line.removesuffix("\r") for line in content.split("\n")]
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last row; it does not start a new one
    if not lines:
        raise DatasetFormatError(f"{labels} is empty: expected a header row with 'file' and 'text'")
    header = lines[0].split("\t")
    missing = [c for c in ("file", "text") if c not in header]
    if missing:
        raise DatasetFormatError(f"{labels} header {header} lacks the column(s) {missing}")
    file_col, text_col = header.index("file"), header.index("text")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) <= max(file_col, text_col):
            raise DatasetFormatError(f"{labels}:{number} has {len(cells)} columns, expected at least {len(header)}")
        records.append(LineRecord(folder / cells[file_col], cells[text_col]))
    return records


def open_image(path: Path) -> Image.Image:
    """Open and fully decode an image, or raise ``ValueError`` naming the file and the problem."""
    try:
        with Image.open(path) as image:
            image.load()
            return image
    except FileNotFoundError as error:
        raise ValueError(f"{path}: file not found") from error
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError) as error:
        raise ValueError(f"{path}: not a readable image ({error})") from error


def image_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` from the image header only (cheap), or ``ValueError`` if unreadable."""
    try:
        with Image.open(path) as image:
            return image.size
    except FileNotFoundError as error:
        raise ValueError(f"{path}: file not found") from error
    except (UnidentifiedImageError, OSError, SyntaxError) as error:
        raise ValueError(f"{path}: not a readable image ({error})") from error


class FolderLines(Dataset):
    """``(PIL image, text)`` pairs from a dataset folder; ``records`` may be pre-filtered."""

    def __init__(self, folder: str | Path, records: list[LineRecord] | None = None):
        self.folder = Path(folder)
        self.records = read_labels(self.folder) if records is None else records

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> tuple[Image.Image, str]:
        record = self.records[index]
        return open_image(record.path), record.text
