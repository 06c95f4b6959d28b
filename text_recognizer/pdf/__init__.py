"""PDFs in and out: scanned pages rendered for reading, and searchable PDFs written back.

Why a package of its own: archives and families deliver scans as multi-page PDFs, and a reading is most useful
put back into the PDF as an invisible text layer that a viewer can search and copy from (what OCRmyPDF does for
print). Everything here goes through pypdfium2 (PDFium, BSD/Apache licensed; PyMuPDF would bring the AGPL).

PDFium is not thread-safe: every call into it in this package holds :data:`PDFIUM_LOCK`, so a server's worker
threads take turns (a process reads one PDF at a time; run more processes for more at once).

May import the standard library, Pillow, pypdfium2, fontTools and ``text_recognizer.page_reader``'s result types;
nothing above it (the CLI, the API) is imported here.
"""

from __future__ import annotations

import threading
from pathlib import Path

#: Held around every PDFium call in this package (PDFium keeps global state and is not thread-safe).
PDFIUM_LOCK = threading.RLock()

#: What every PDF file starts with (after at most a little junk, which PDFium tolerates: we look at 1 KiB).
PDF_MAGIC = b"%PDF-"


def pdfium():
    """The ``pypdfium2`` module, or an ``ImportError`` saying how to install it (the ``pdf`` extra)."""
    try:
        import pypdfium2
    except ImportError as error:
        raise ImportError(f"reading and writing PDFs needs pypdfium2 ({error}); install it with: "
                          "pip install 'text-recognizer[pdf]'") from error
    return pypdfium2


def is_pdf(source: str | Path | bytes) -> bool:
    """Whether ``source`` (a path or the file's bytes) is a PDF, by its first bytes rather than its name."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        head = bytes(source[:1024])
    else:
        try:
            with open(source, "rb") as handle:
                head = handle.read(1024)
        except OSError:
            return False
    return PDF_MAGIC in head
