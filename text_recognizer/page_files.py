"""Page files: images and PDFs read page by page, and the outputs written one file per input (a searchable PDF,
hOCR) or one per page (PAGE-XML, ALTO).

Why a module of its own: the CLI's ``--page``, the batch command and the API all take "a file of pages" from a
user, and a PDF is several pages where an image is one. Here a file becomes :class:`ReadPage` items in page order,
each with its result or the reason it could not be read, so one bad page never stops the others; and the names of
output files are chosen in one place (``letters.pdf`` -> ``letters.pdf``/``letters.hocr``, and
``letters_page0003.xml`` for its third page's PAGE-XML or ALTO).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from text_recognizer.inputs import image_extensions
from text_recognizer.page_formats import XML_FORMATS
from text_recognizer.page_result import PageResult

#: Output formats written one file per input file (all its pages in one), beside the per-page XML formats.
FILE_FORMATS = ("pdf", "hocr")
#: Every format written to an output folder rather than printed.
WRITTEN_FORMATS = (*XML_FORMATS, *FILE_FORMATS)


def page_file_suffixes() -> frozenset[str]:
    """What a folder of pages may hold: every image type Pillow opens, and PDFs."""
    return image_extensions() | {".pdf"}


@dataclass
class ReadPage:
    """Page ``number`` (from 1; ``None`` for an image file) of the input file ``path``: its ``result``, or the
    ``error`` that kept it from being read."""

    path: Path
    number: int | None
    result: PageResult | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        """How messages name the page: the file, and the page number for a PDF's page."""
        return str(self.path) if self.number is None else f"{self.path} page {self.number}"


def read_page_file(reader, path: Path, options: dict | None = None, dpi: float | None = None,
                   max_pdf_pages: int | None = None) -> Iterator[ReadPage]:
    """Read the page image or every page of the PDF ``path`` with ``reader`` (a ``PageReader``), in order.

    ``options`` go to ``reader.read`` (decoder, readings, language). A PDF's pages are rendered at ``dpi``
    (None: each page's scan resolution, see :func:`text_recognizer.pdf.pages.render_pdf`) and named
    ``<path>#page=<n>``. Raises ``PdfError`` (a ``ValueError``) before any page for a PDF that cannot be opened,
    is encrypted or has too many pages; a page that cannot be rendered or read comes with its ``error``.
    """
    from text_recognizer.pdf import is_pdf

    options = options or {}
    if not is_pdf(path):
        try:
            yield ReadPage(path, None, reader.read(path, **options))
        except (ValueError, OSError) as error:
            yield ReadPage(path, None, error=_message(error, path))
        return
    from text_recognizer.pdf.pages import MAX_PDF_PAGES, render_pdf

    pages = render_pdf(path, dpi, max_pdf_pages or MAX_PDF_PAGES, reader.max_pixels, name=str(path))
    for rendered in pages:
        if rendered.error is not None:
            yield ReadPage(path, rendered.number, error=f"{path}: {rendered.error}")
            continue
        try:
            result = reader.read(rendered.image, name=f"{path}#page={rendered.number}", **options)
        except ValueError as error:
            yield ReadPage(path, rendered.number, error=_message(error, path))
        else:
            yield ReadPage(path, rendered.number, replace(result, page=rendered.number))


def _message(error: Exception, path: Path) -> str:
    text = str(error)
    return text if str(path) in text else f"{path}: {text}"


def output_target(path: Path, fmt: str, output_dir: Path, number: int | None = None) -> Path:
    """Where ``fmt`` output for ``path`` (page ``number`` of it, for the per-page XML formats) goes."""
    if fmt in XML_FORMATS:
        return output_dir / (f"{path.stem}.xml" if number is None else f"{path.stem}_page{number:04d}.xml")
    if fmt in FILE_FORMATS:
        return output_dir / f"{path.stem}.{fmt}"
    raise ValueError(f"{fmt!r} is not written to files; those are {WRITTEN_FORMATS}")


def target_problem(files: Sequence[Path], index: int, fmt: str, output_dir: Path) -> str | None:
    """Why ``fmt`` output for ``files[index]`` must not be written into ``output_dir``, or ``None``: two inputs with
    the same name, an XML file already beside the image (its ground truth?), or the input itself."""
    path = files[index]
    stems = [file.stem for file in files]
    target = output_target(path, fmt, output_dir)
    if stems.count(path.stem) > 1:
        return f"several inputs are named {path.stem}.*; their {target.name} would overwrite each other: " \
               "read them one folder at a time"
    if target.resolve() == path.resolve():
        return f"{target} is the input itself; choose another --output-dir"
    if fmt in XML_FORMATS and target.exists() and target.parent.resolve() == path.parent.resolve():
        return f"{target} is already there beside the image (its ground truth?); choose another --output-dir"
    return None


def write_file_output(pages: Sequence[ReadPage], fmt: str, target: Path) -> Path:
    """Write the pages of one input file as a searchable PDF or hOCR to ``target``, atomically (a file that is
    there is whole). A PDF's page that was not read keeps its place, without text; hOCR holds the pages read."""
    if fmt == "pdf":
        from text_recognizer.pdf.text_layer import PageSource, searchable_pdf

        data = searchable_pdf([(PageSource(page.path, None if page.number is None else page.number - 1),
                                page.result) for page in pages if page.result is not None or page.number])
    elif fmt == "hocr":
        from text_recognizer.hocr import hocr

        data = hocr([(page.result, page.number) for page in pages if page.result is not None])
    else:
        raise ValueError(f"write_file_output writes {FILE_FORMATS}, got {fmt!r}")
    write_atomically(target, data)
    return target


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` into ``path`` so that the file is either absent or whole, even if the process dies mid-write (a
    temporary file beside it, flushed to disk, then renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with open(partial, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)
