"""PDF pages as images to read: each page rendered by PDFium at the scan's own resolution (or a chosen one).

Why: a scanned PDF is a wrapper around page images; reading it at the resolution it was scanned at loses nothing and
invents nothing, so by default each page is rendered at the resolution of the largest image on it (a scan fills its
page), and at :data:`DEFAULT_DPI` when the page has no such image (a born-digital page). Limits keep a server's memory
bounded: a PDF with more than ``max_pages`` pages is refused before any page is rendered, and a page that would be
larger than ``max_pixels`` is reported in its own :class:`RenderedPage` (the other pages are still read).
Encrypted and broken files are refused with a :class:`PdfError` saying which.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from text_recognizer.pdf import PDFIUM_LOCK

#: Resolution for pages without a scan on them, and the range a scan's own resolution is kept within.
DEFAULT_DPI = 300.0
DPI_RANGE = (72.0, 600.0)
#: Pages in one PDF, at most, by default (``--max-pdf-pages``).
MAX_PDF_PAGES = 500
#: A scan is "the page's image" when it covers at least this share of the page.
_SCAN_COVER = 0.5


class PdfError(ValueError):
    """A PDF that cannot be read at all; ``reason`` says why in one word: ``encrypted``, ``unreadable`` (broken or
    not a PDF), ``empty`` (no pages) or ``too_many_pages``."""

    def __init__(self, message: str, reason: str = "unreadable"):
        super().__init__(message)
        self.reason = reason


@dataclass
class RenderedPage:
    """Page ``number`` (1-based) of a PDF: its ``image`` at ``dpi``, or ``error`` (and no image) when it cannot be
    rendered within the limits. ``size_points``: the page's (width, height) as displayed, in PDF points."""

    number: int
    dpi: float
    size_points: tuple[float, float]
    image: Image.Image | None = None
    error: str | None = None


def _describe(error: Exception) -> tuple[str, str]:
    text = str(error)
    if "password" in text.lower():
        return "the PDF is encrypted (password protected); decrypt it first (e.g. qpdf --decrypt)", "encrypted"
    if "format" in text.lower() or "file access" in text.lower() or "not a pdf" in text.lower():
        return "not a readable PDF (damaged or not a PDF)", "unreadable"
    return f"cannot open the PDF ({text})", "unreadable"


def open_pdf(source: str | Path | bytes, name: str | None = None):
    """A ``pypdfium2.PdfDocument`` for ``source`` (a path or the file's bytes), or :class:`PdfError` with why not.
    Call with :data:`PDFIUM_LOCK` held, and close the document when done."""
    from text_recognizer.pdf import pdfium as load_pdfium

    pdfium = load_pdfium()
    label = name or (str(source) if not isinstance(source, (bytes, bytearray)) else "PDF")
    try:
        document = pdfium.PdfDocument(bytes(source) if isinstance(source, bytearray) else source)
    except pdfium.PdfiumError as error:
        message, reason = _describe(error)
        raise PdfError(f"{label}: {message}", reason) from None
    except FileNotFoundError:
        raise PdfError(f"{label}: file not found") from None
    return document


def scan_dpi(page) -> float | None:
    """The horizontal resolution of the largest image drawn on ``page`` when it covers most of the page, or None."""
    import pypdfium2.raw as raw

    width, height = page.get_size()
    best: tuple[float, float] | None = None  # (covered area, dpi)
    for item in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        left, bottom, right, top = item.get_bounds()
        pixels_wide, _ = item.get_px_size()
        area = max(right - left, 0.0) * max(top - bottom, 0.0)
        if right - left > 0 and pixels_wide > 0 and (best is None or area > best[0]):
            best = (area, pixels_wide / ((right - left) / 72.0))
    if best is None or best[0] < _SCAN_COVER * width * height:
        return None
    return min(max(round(best[1]), DPI_RANGE[0]), DPI_RANGE[1])


def page_count(source: str | Path | bytes, name: str | None = None) -> int:
    """How many pages ``source`` has; :class:`PdfError` for a file that cannot be opened."""
    with PDFIUM_LOCK:
        document = open_pdf(source, name)
        try:
            return len(document)
        finally:
            document.close()


def render_pdf(source: str | Path | bytes, dpi: float | None = None, max_pages: int = MAX_PDF_PAGES,
               max_pixels: int | None = None, name: str | None = None) -> Iterator[RenderedPage]:
    """Yield every page of ``source`` rendered in grey (what the reader reads), first to last.

    ``dpi``: None renders each page at its scan's resolution (:func:`scan_dpi`), else :data:`DEFAULT_DPI`.
    Raises :class:`PdfError` before the first page for a file that cannot be opened or has more than
    ``max_pages`` pages; a page over ``max_pixels`` comes with its ``error`` set.
    """
    label = name or (str(source) if not isinstance(source, (bytes, bytearray)) else "PDF")
    if dpi is not None and not dpi > 0:
        raise ValueError(f"dpi must be positive, got {dpi!r}")
    with PDFIUM_LOCK:
        document = open_pdf(source, label)
        count = len(document)
    try:
        if count == 0:
            raise PdfError(f"{label}: the PDF has no pages", "empty")
        if count > max_pages:
            raise PdfError(f"{label}: {count} pages is more than the limit of {max_pages}; split the PDF "
                           "(e.g. qpdf --split-pages)", "too_many_pages")
        for index in range(count):
            yield _render_page(document, index, dpi, max_pixels)
    finally:
        with PDFIUM_LOCK:
            document.close()


def _render_page(document, index: int, dpi: float | None, max_pixels: int | None) -> RenderedPage:
    with PDFIUM_LOCK:
        page = document[index]
        try:
            size = page.get_size()
            if page.get_rotation() in (90, 270):
                size = (size[1], size[0])
            chosen = dpi if dpi is not None else (scan_dpi(page) or DEFAULT_DPI)
            scale = chosen / 72.0
            pixels = round(size[0] * scale) * round(size[1] * scale)
            if max_pixels is not None and pixels > max_pixels:
                return RenderedPage(index + 1, chosen, size, error=(
                    f"page {index + 1} at {chosen:g} dpi would be {pixels:,} pixels, more than the page limit of "
                    f"{max_pixels:,}; render it at a lower dpi"))
            bitmap = page.render(scale=scale, grayscale=True)
            image = bitmap.to_pil().convert("L")
            bitmap.close()
        finally:
            page.close()
    return RenderedPage(index + 1, chosen, size, image=image)


def render_pdf_page(source: str | Path | bytes, number: int, dpi: float | None = None,
                    max_pixels: int | None = None, name: str | None = None) -> RenderedPage:
    """Page ``number`` (from 1) of ``source`` alone, as :func:`render_pdf` renders it (a batch worker reads one page
    of a long PDF without rendering the others). :class:`PdfError` for a file that cannot be opened or a page that
    is not in it."""
    label = name or (str(source) if not isinstance(source, (bytes, bytearray)) else "PDF")
    with PDFIUM_LOCK:
        document = open_pdf(source, label)
    try:
        if not 1 <= number <= len(document):
            raise PdfError(f"{label}: has no page {number} (it has {len(document)})", "unreadable")
        return _render_page(document, number - 1, dpi, max_pixels)
    finally:
        with PDFIUM_LOCK:
            document.close()
