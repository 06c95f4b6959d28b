"""PDFs the tests make: scans wrapped by Pillow's PDF writer (real PDFs, JPEG or Flate images inside), a PDF
encrypted with a password nobody knows (the standard security handler's entries, written by hand), and broken ones."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from tests.segmentation.test_classical import FIXTURES, compose_page
from text_recognizer.data.folder import read_labels

NAMES = [record.path.name for record in read_labels(FIXTURES)]


def composed_page() -> Image.Image:
    """The fixture lines on one page (1,400 px wide), grey."""
    return compose_page(NAMES)[0]


def scan_pdf(images: list[Image.Image], path: Path, resolution: float = 150.0) -> Path:
    """``images`` as the pages of one PDF, each an image filling its page at ``resolution`` dpi."""
    images[0].save(path, "PDF", save_all=True, append_images=images[1:], resolution=resolution)
    return path


def encrypted_pdf(path: Path) -> Path:
    """A one-page PDF under the standard security handler (RC4, revision 2) whose user password is not empty:
    its /U entry matches no password we know, so every reader must ask for one."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
               b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <" + b"ab" * 32 + b"> /U <"
               + b"cd" * 32 + b"> >>"]
    return _write(path, objects, b"/Encrypt 4 0 R /ID [<00112233445566778899aabbccddeeff> "
                                 b"<00112233445566778899aabbccddeeff>]")


def _write(path: Path, objects: list[bytes], trailer_extra: bytes = b"") -> Path:
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R " % (len(objects) + 1) + trailer_extra
              + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    path.write_bytes(out.getvalue())
    return path
