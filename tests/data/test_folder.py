"""Tests for text_recognizer.data.folder: labels.tsv parsing, image opening, FolderLines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from text_recognizer.data.folder import (
    LABELS_FILE,
    DatasetFormatError,
    FolderLines,
    LineRecord,
    image_size,
    open_image,
    read_labels,
)
from text_recognizer.data.synthetic import render_line


def write_labels(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LABELS_FILE).write_text(text, encoding="utf-8")
    return folder


def test_basic_labels(tmp_path: Path) -> None:
    write_labels(tmp_path, "file\ttext\na.png\tHello world\nb.png\tsecond line\n")
    assert read_labels(tmp_path) == [
        LineRecord(tmp_path / "a.png", "Hello world"),
        LineRecord(tmp_path / "b.png", "second line"),
    ]


def test_header_with_extra_columns_in_any_order(tmp_path: Path) -> None:
    write_labels(tmp_path, "writer\ttext\tsplit\tfile\nw1\tA MOVE to stop\ttrain\tlines/a01.png\n")
    assert read_labels(tmp_path) == [LineRecord(tmp_path / "lines/a01.png", "A MOVE to stop")]


def test_quotes_are_verbatim(tmp_path: Path) -> None:
    texts = ['"Quoted at the start," he said', 'inside "quotes" here', '"', 'ends with "', "it's 'single'"]
    body = "".join(f"{i}.png\t{t}\n" for i, t in enumerate(texts))
    write_labels(tmp_path, "file\ttext\n" + body)
    assert [r.text for r in read_labels(tmp_path)] == texts


def test_spaces_kept_and_blank_lines_skipped(tmp_path: Path) -> None:
    write_labels(tmp_path, "file\ttext\n\na.png\t  two  spaces \n\n   \nb.png\t\n")
    records = read_labels(tmp_path)
    assert [r.text for r in records] == ["  two  spaces ", ""]


def test_crlf_and_utf8(tmp_path: Path) -> None:
    write_labels(tmp_path, "file\ttext\r\na.png\tcafé #1\r\n")
    assert read_labels(tmp_path) == [LineRecord(tmp_path / "a.png", "café #1")]


def test_header_only_gives_no_records(tmp_path: Path) -> None:
    write_labels(tmp_path, "file\ttext\n")
    assert read_labels(tmp_path) == []


@pytest.mark.parametrize(
    ("header", "missing"),
    [("file\tlabel", "'text'"), ("image\ttext", "'file'"), ("path,text", "'file'"), ("file text", "'file'")],
)
def test_missing_columns(tmp_path: Path, header: str, missing: str) -> None:
    write_labels(tmp_path, header + "\na.png\thello\n")
    with pytest.raises(DatasetFormatError, match="lacks the column") as info:
        read_labels(tmp_path)
    assert missing in str(info.value)
    assert LABELS_FILE in str(info.value)


def test_missing_labels_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="labels.tsv is missing"):
        read_labels(tmp_path)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="does not exist"):
        read_labels(tmp_path / "nope")


def test_empty_file(tmp_path: Path) -> None:
    write_labels(tmp_path, "")
    with pytest.raises(DatasetFormatError, match="is empty"):
        read_labels(tmp_path)


def test_short_row_names_the_line(tmp_path: Path) -> None:
    write_labels(tmp_path, "file\tsplit\ttext\na.png\ttrain\tok\nb.png\ttrain\n")
    with pytest.raises(DatasetFormatError, match=r"labels.tsv:3 has 2 columns, expected at least 3"):
        read_labels(tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    tmp_path.joinpath(LABELS_FILE).write_bytes("file\ttext\na.png\tcaf\xe9\n".encode("latin-1"))
    with pytest.raises(DatasetFormatError, match="not valid UTF-8"):
        read_labels(tmp_path)


def test_format_error_is_value_error() -> None:
    assert issubclass(DatasetFormatError, ValueError)


# ---------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------


def save_line(path: Path, text: str, seed: int = 0) -> Image.Image:
    image = render_line(text, np.random.default_rng(seed), height=32)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return image


def test_folder_lines_returns_image_and_text(tmp_path: Path) -> None:
    first = save_line(tmp_path / "img" / "a.png", "Hello")
    second = save_line(tmp_path / "b.jpg", "World", seed=1)
    write_labels(tmp_path, 'file\ttext\nimg/a.png\tHello\nb.jpg\t"World"\n')
    dataset = FolderLines(tmp_path)
    assert len(dataset) == 2
    image, text = dataset[0]
    assert isinstance(image, Image.Image) and text == "Hello"
    assert image.size == first.size
    assert np.array_equal(np.asarray(image), np.asarray(first))  # PNG is lossless
    image, text = dataset[1]
    assert text == '"World"' and image.size == second.size


def test_folder_lines_with_given_records(tmp_path: Path) -> None:
    save_line(tmp_path / "a.png", "Hi")
    records = [LineRecord(tmp_path / "a.png", "Hi")]
    dataset = FolderLines(tmp_path, records)  # no labels.tsv needed
    assert len(dataset) == 1 and dataset[0][1] == "Hi"


def test_open_image_is_fully_loaded_after_the_file_is_gone(tmp_path: Path) -> None:
    path = tmp_path / "a.png"
    original = save_line(path, "Gone")
    image = open_image(path)
    path.unlink()
    assert np.array_equal(np.asarray(image), np.asarray(original))


def test_open_image_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.png"
    with pytest.raises(ValueError, match="missing.png: file not found"):
        open_image(path)
    with pytest.raises(ValueError, match="missing.png: file not found"):
        image_size(path)


def _truncated_png(tmp_path: Path) -> Path:
    full = tmp_path / "full.png"
    save_line(full, "A truncated line of text", seed=3)
    data = full.read_bytes()
    path = tmp_path / "truncated.png"
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize(
    "make",
    [
        lambda d: (d / "text.png", b"this is not an image at all"),
        lambda d: (d / "empty.png", b""),
        lambda d: (d / "corrupt.png", b"\x89PNG\r\n\x1a\n" + b"\x00garbage" * 20),
        lambda d: (d / "labels.jpg", b"file\ttext\n"),
    ],
)
def test_open_image_unreadable_bytes(tmp_path: Path, make) -> None:
    path, data = make(tmp_path)
    path.write_bytes(data)
    with pytest.raises(ValueError, match="not a readable image") as info:
        open_image(path)
    assert str(path) in str(info.value)


def test_open_image_truncated(tmp_path: Path) -> None:
    path = _truncated_png(tmp_path)
    with pytest.raises(ValueError, match="not a readable image") as info:
        open_image(path)
    assert str(path) in str(info.value)


def test_folder_lines_unreadable_image_names_file(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"nope")
    write_labels(tmp_path, "file\ttext\nbad.png\thello\n")
    with pytest.raises(ValueError, match="bad.png"):
        FolderLines(tmp_path)[0]


def test_image_size_reads_header(tmp_path: Path) -> None:
    image = save_line(tmp_path / "a.png", "size")
    assert image_size(tmp_path / "a.png") == image.size
    (tmp_path / "b.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="b.png: not a readable image"):
        image_size(tmp_path / "b.png")


@pytest.mark.parametrize("odd", ["\u2028", "\x0c", "\x1e", "\x85", "\r"])
def test_only_newlines_end_rows(tmp_path: Path, odd: str) -> None:
    # str.splitlines() would also split on these; a text is everything in its column, verbatim
    text = f"before{odd}after"
    write_labels(tmp_path, "file\ttext\n")
    (tmp_path / LABELS_FILE).write_bytes(f"file\ttext\na.png\t{text}\nb.png\tnext\n".encode())
    assert [r.text for r in read_labels(tmp_path)] == [text, "next"]


def test_utf8_byte_order_mark(tmp_path: Path) -> None:
    # spreadsheet exports often start with a BOM; the header must still be found
    (tmp_path / LABELS_FILE).write_bytes("\ufefffile\ttext\na.png\thello\n".encode())
    assert read_labels(tmp_path) == [LineRecord(tmp_path / "a.png", "hello")]
