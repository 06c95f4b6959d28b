"""PDF pages rendered for reading: at the scan's own resolution or a chosen one, and every bad PDF refused with a
reason (encrypted, broken, not a PDF, too many pages, a page over the pixel limit)."""

from __future__ import annotations

import threading

import pytest
from PIL import Image

from tests.pdf.make import composed_page, encrypted_pdf, scan_pdf
from text_recognizer.pdf import is_pdf
from text_recognizer.pdf.pages import PdfError, page_count, render_pdf, scan_dpi


@pytest.fixture(scope="module")
def two_pages(tmp_path_factory):
    page = composed_page()
    path = scan_pdf([page, page.rotate(180)], tmp_path_factory.mktemp("pdf") / "scan.pdf", resolution=150)
    return path, page


def test_pages_come_at_the_scans_resolution(two_pages):
    path, page = two_pages
    rendered = list(render_pdf(path))
    assert [item.number for item in rendered] == [1, 2]
    assert all(item.dpi == 150 and item.error is None for item in rendered)
    assert rendered[0].image.size == page.size  # the scan's pixels, neither more nor fewer
    assert rendered[0].size_points == pytest.approx((page.width * 72 / 150, page.height * 72 / 150), abs=0.01)


def test_a_chosen_dpi_overrides_the_scans(two_pages):
    path, page = two_pages
    first = next(iter(render_pdf(path, dpi=300)))
    assert first.dpi == 300 and first.image.size == (page.width * 2, page.height * 2)


def test_a_page_without_a_scan_is_rendered_at_300_dpi(tmp_path):
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument.new()
    document.new_page(144, 72)  # 2 x 1 inch, empty
    document.save(tmp_path / "empty.pdf")
    document.close()
    (only,) = render_pdf(tmp_path / "empty.pdf")
    assert only.dpi == 300 and only.image.size == (600, 300)


def test_scan_dpi_reads_the_largest_image(two_pages):
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(two_pages[0])
    assert scan_dpi(document[0]) == 150
    document.close()


def test_is_pdf_looks_at_the_bytes_not_the_name(two_pages, tmp_path):
    renamed = tmp_path / "scan.png"
    renamed.write_bytes(two_pages[0].read_bytes())
    picture = tmp_path / "page.pdf"
    Image.new("L", (10, 10)).save(picture, "PNG")
    assert is_pdf(renamed) and is_pdf(two_pages[0].read_bytes()) and not is_pdf(picture)
    assert not is_pdf(tmp_path / "missing.pdf")


@pytest.mark.parametrize(("content", "message"), [
    ("encrypted", r"encrypted \(password protected\)"),
    (b"%PDF-1.4\n1 0 obj <<>>\nnot a pdf at all", "not a readable PDF"),
    (b"", "not a readable PDF"),
])
def test_pdfs_that_cannot_be_opened_are_refused_with_the_reason(content, message, tmp_path):
    path = tmp_path / "bad.pdf"
    if content == "encrypted":
        encrypted_pdf(path)
    else:
        path.write_bytes(content)
    with pytest.raises(PdfError, match=message):
        list(render_pdf(path))
    with pytest.raises(PdfError, match=message):
        page_count(path.read_bytes())


def test_too_many_pages_are_refused_before_any_is_rendered(two_pages):
    with pytest.raises(PdfError, match="2 pages is more than the limit of 1"):
        next(iter(render_pdf(two_pages[0], max_pages=1)))


def test_a_page_over_the_pixel_limit_is_reported_and_the_others_go_on(tmp_path):
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument.new()
    document.new_page(72, 72)
    document.new_page(7200, 7200)  # 100 x 100 inches: 30,000 px a side at 300 dpi
    document.save(tmp_path / "mixed.pdf")
    document.close()
    small, huge = render_pdf(tmp_path / "mixed.pdf", max_pixels=50_000_000)
    assert small.image is not None and small.error is None
    assert huge.image is None and "more than the page limit" in huge.error and "lower dpi" in huge.error


def test_threads_take_turns(two_pages):
    """PDFium is not thread-safe: four threads rendering at once all get whole, equal pages."""
    sizes, errors = [], []

    def render():
        try:
            sizes.append(tuple(item.image.size for item in render_pdf(two_pages[0])))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=render) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(set(sizes)) == 1 and len(sizes) == 4
