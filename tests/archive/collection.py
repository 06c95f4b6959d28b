"""A small collection the batch tests make: page images and PDFs in two boxes with clashing names, and a broken PDF."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from tests.pdf.make import NAMES, scan_pdf
from tests.segmentation.test_classical import compose_page


def page(first: int, count: int = 2) -> Image.Image:
    """A page of ``count`` fixture lines starting at line ``first`` (small pages: fast to read)."""
    return compose_page([NAMES[(first + i) % len(NAMES)] for i in range(count)])[0]


def make_collection(root: Path, images: int = 2) -> Path:
    """``root/box1/letter.png``, ``root/box1/note_<n>.png`` (``images`` - 1 of them), ``root/box2/letter.pdf``
    (two pages) and ``root/box2/broken.pdf``: 2 + ``images`` pages to read, and one file that fails."""
    (root / "box1").mkdir(parents=True, exist_ok=True)
    (root / "box2").mkdir(parents=True, exist_ok=True)
    page(0).save(root / "box1" / "letter.png")
    for number in range(1, images):
        page(number).save(root / "box1" / f"note_{number}.png")
    scan_pdf([page(2), page(4, 1)], root / "box2" / "letter.pdf")
    (root / "box2" / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00" * 64)
    return root
