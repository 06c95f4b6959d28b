"""``--page`` with PDFs on the command line (in process, the bundled model): a PDF's pages read in order with their
page numbers, searchable PDFs and hOCR written per input, PAGE/ALTO per page, and bad PDFs reported while the rest is
read."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from tests.pdf.make import NAMES, composed_page, encrypted_pdf, scan_pdf
from text_recognizer.recognizer import main

pdfium = pytest.importorskip("pypdfium2")


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    """A two-page scan: the fixture lines, then a blank page."""
    folder = tmp_path_factory.mktemp("scans")
    return scan_pdf([composed_page(), Image.new("L", (900, 1200), 235)], folder / "letters.pdf")


def read_json(capsys, *args: str) -> tuple[int, list, str]:
    status = main(["--page", *args, "--format", "json", "--progress", "never"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if captured.out.strip() else [], captured.err


def test_a_pdf_is_read_page_by_page_and_bad_pdfs_are_reported(pdf, tmp_path, capsys):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00" * 100)
    locked = encrypted_pdf(tmp_path / "locked.pdf")
    status, pages, err = read_json(capsys, str(broken), str(pdf), str(locked))
    assert status == 1 and "Traceback" not in err
    assert f"error: {broken}: not a readable PDF" in err and f"error: {locked}: the PDF is encrypted" in err
    assert [(page["image"], page["page"]) for page in pages] == [(f"{pdf}#page=1", 1), (f"{pdf}#page=2", 2)]
    assert len(pages[0]["lines"]) == len(NAMES) and pages[1]["lines"] == []
    assert "2 page(s) could not be read; 2 of 4 were" in err


def test_searchable_pdf_and_hocr_out(pdf, tmp_path, capsys):
    status, pages, _ = read_json(capsys, str(pdf))
    assert status == 0
    out = tmp_path / "out"
    assert main(["--page", str(pdf), "--format", "pdf", "--output-dir", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"{pdf} -> {out / 'letters.pdf'} (2 pages, {len(NAMES)} lines)"
    document = pdfium.PdfDocument(out / "letters.pdf")
    texts = [page.get_textpage().get_text_range().replace("\r\n", "\n") for page in document]
    document.close()
    assert texts == [page["text"] for page in pages]
    assert main(["--page", str(pdf), "--format", "hocr", "--output-dir", str(out)]) == 0
    hocr = (out / "letters.hocr").read_text()
    assert hocr.count("class=\"ocr_page\"") == 2 and hocr.count("class=\"ocr_line\"") == len(NAMES)


def test_page_xml_per_pdf_page_and_pdfs_in_folders(pdf, tmp_path, capsys):
    out = tmp_path / "alto"
    assert main(["--page", str(pdf.parent), "--format", "alto", "--output-dir", str(out)]) == 0
    assert sorted(path.name for path in out.iterdir()) == ["letters_page0001.xml", "letters_page0002.xml"]
    assert f"{pdf} page 2 -> {out / 'letters_page0002.xml'} (0 lines)" in capsys.readouterr().out


def test_the_input_is_never_overwritten(pdf, capsys):
    before = pdf.read_bytes()
    assert main(["--page", str(pdf), "--format", "pdf", "--output-dir", str(pdf.parent)]) == 1
    assert "is the input itself" in capsys.readouterr().err and pdf.read_bytes() == before


def test_text_headers_name_the_pdf_page(pdf, capsys):
    assert main(["--page", str(pdf), "--format", "text", "--dpi", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"==> {pdf} page 1 <==\n") and f"\n\n==> {pdf} page 2 <==\n" in out


def test_too_many_pages(pdf, capsys):
    assert main(["--page", str(pdf), "--max-pdf-pages", "1"]) == 1
    assert "2 pages is more than the limit of 1" in capsys.readouterr().err
