"""PDF uploads on the page route, and the formats that hold whole files (a searchable PDF, hOCR).

Why a module of its own: a PDF is several pages where an image is one, so it has its own answer (a list of pages,
each with its number, its lines or the reason it was not read) and its own refusals (encrypted, broken, too many
pages: 4xx with a code, never a 500). PDFium renders the pages; it is not thread-safe, so the page rendering of
concurrent requests takes turns (``text_recognizer.pdf.PDFIUM_LOCK``) while reading the lines runs in parallel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from api.errors import APIError
from api.serving import ImageInput, Serving
from text_recognizer.page_formats import page_json, render
from text_recognizer.page_result import PageResult

#: What ``?format=`` gives for the file formats.
FILE_MEDIA_TYPES = {"pdf": "application/pdf", "hocr": "application/xhtml+xml"}
_PDF_ERRORS = {  # PdfError.reason -> (status, code)
    "encrypted": (400, "encrypted_pdf"),
    "unreadable": (400, "unreadable_pdf"),
    "empty": (400, "empty_pdf"),
    "too_many_pages": (413, "too_many_pages"),
}


def file_body(fmt: str, pages: list[tuple[object, PageResult | None, int | None]]) -> bytes:
    """``pages`` (source file or bytes, result, PDF page index) as a searchable PDF or hOCR; 501 without the
    packages."""
    try:
        if fmt == "pdf":
            from text_recognizer.pdf.text_layer import PageSource, searchable_pdf

            return searchable_pdf([(PageSource(data, index), result) for data, result, index in pages])
        from text_recognizer.hocr import hocr

        return hocr([(result, None if index is None else index + 1) for _, result, index in pages
                     if result is not None])
    except ImportError as error:
        raise APIError(501, "format_unavailable", f"this server cannot write {fmt}: {error}") from None


def read_pdf(serving: Serving, item: ImageInput, read: Callable, fmt: str, dpi: float | None) -> dict:
    """Runs in a worker thread: every page of the uploaded PDF rendered (within the page and pixel limits) and read
    with ``read(image, name)`` -> ``(PageResult, seconds segmenting)``; the body in ``fmt``."""
    from text_recognizer.pdf import pdfium
    from text_recognizer.pdf.pages import PdfError, render_pdf

    try:
        pdfium()
    except ImportError as error:
        raise APIError(501, "pdf_unavailable", f"this server cannot read PDFs: {error}") from None
    s = serving.settings
    name = item.filename or "document.pdf"
    pages: list[tuple[int, PageResult | None, str | None]] = []
    segment_s = render_s = 0.0
    try:
        started = time.perf_counter()
        for rendered in render_pdf(item.data or b"", dpi, s.max_pdf_pages, s.max_pixels, name=item.what):
            render_s += time.perf_counter() - started
            if rendered.error is not None:
                pages.append((rendered.number, None, rendered.error))
            else:
                result, seconds = read(rendered.image, f"{name}#page={rendered.number}")
                segment_s += seconds
                pages.append((rendered.number, replace(result, page=rendered.number), None))
            started = time.perf_counter()
    except PdfError as error:
        status, code = _PDF_ERRORS.get(error.reason, (400, "unreadable_pdf"))
        raise APIError(status, code, str(error)) from None
    if fmt in ("page", "alto") and len(pages) > 1:
        raise APIError(422, "one_page_format", f"format {fmt} holds one page and this PDF has {len(pages)}; ask "
                                               "for format=json, pdf or hocr, or send one page at a time")
    return {"body": _body(fmt, item, name, pages), "pages": len(pages), "render_s": render_s,
            "segment_s": segment_s, "sizes": [(r.width, r.height) for _, r, _ in pages if r is not None]}


def _body(fmt: str, item: ImageInput, name: str, pages: list) -> dict | bytes:
    if fmt in FILE_MEDIA_TYPES:
        return file_body(fmt, [(item.data, result, number - 1) for number, result, _ in pages])
    if fmt in ("page", "alto"):
        number, result, error = pages[0]
        if result is None:
            raise APIError(413, "page_too_large", error)
        return render(result, fmt)
    documents = []
    for number, result, error in pages:
        documents.append({**page_json(result), "error": None} if result is not None else
                         {"page": number, "width": None, "height": None, "lines": [], "text": "", "error": error})
    return {"image": name, "pages": documents, "text": "\f".join(page["text"] for page in documents)}
