"""The OCRmyPDF engine plugin, run as a user runs it (``ocrmypdf --plugin text_recognizer.ocrmypdf``, a real
subprocess): the output PDF's text is our reading of its pages; the sandwich renderer is refused with a message.
Skipped without OCRmyPDF or the tesseract program it insists on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pdf.make import composed_page, scan_pdf
from text_recognizer.metrics import cer
from text_recognizer.page_reader import PageReader
from text_recognizer.recognizer import LineRecognizer

pytest.importorskip("ocrmypdf")
pdfium = pytest.importorskip("pypdfium2")
pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="OCRmyPDF wants the tesseract program")
REPO = Path(__file__).resolve().parents[1]


def ocrmypdf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ocrmypdf", "--plugin", "text_recognizer.ocrmypdf",
                           "--output-type", "pdf", "--jobs", "1", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def test_the_output_holds_our_reading(tmp_path):
    page = composed_page()
    source = scan_pdf([page], tmp_path / "letters.pdf", resolution=150)
    done = ocrmypdf(str(source), str(tmp_path / "out.pdf"))
    assert done.returncode == 0, done.stderr[-3000:]
    document = pdfium.PdfDocument(tmp_path / "out.pdf")
    text = document[0].get_textpage().get_text_range().replace("\r\n", "\n")
    document.close()
    ours = PageReader(LineRecognizer()).read(page).text
    flat = lambda value: " ".join(value.split())  # noqa: E731 - spacing is the renderer's
    assert len(text.splitlines()) == len(ours.splitlines()) and cer(flat(text), flat(ours)) < 0.05, (text, ours)


def test_the_sandwich_renderer_is_refused_with_a_reason(tmp_path):
    source = scan_pdf([composed_page()], tmp_path / "letters.pdf")
    done = ocrmypdf("--pdf-renderer", "sandwich", str(source), str(tmp_path / "out.pdf"))
    assert done.returncode != 0 and "not sandwich" in done.stderr
