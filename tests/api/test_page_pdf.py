"""PDFs on ``POST /v1/predict/page`` against a real uvicorn server: a PDF's pages read in order (multipart, raw
``application/pdf``, base64 JSON), searchable PDFs and hOCR out, and every bad PDF a 4xx with its code (encrypted,
broken, too many pages, a format that holds one page); a page over the pixel limit is reported in its place."""

from __future__ import annotations

import base64

import httpx
import pytest
from PIL import Image

from tests.api.test_page_route import check, encoded
from tests.pdf.make import encrypted_pdf, scan_pdf
from tests.segmentation.test_classical import compose_page

ROUTE = "/v1/predict/page"
pdfium = pytest.importorskip("pypdfium2")


@pytest.fixture(scope="module")
def page(lines) -> Image.Image:
    return compose_page([path.name for path, _ in lines])[0]


@pytest.fixture(scope="module")
def two_pages(page, tmp_path_factory) -> bytes:
    return scan_pdf([page, Image.new("L", (800, 1000), 235)], tmp_path_factory.mktemp("pdf") / "two.pdf").read_bytes()


def post(server, data: bytes, name: str = "letters.pdf", content_type: str = "application/pdf",
         **params) -> httpx.Response:
    return httpx.post(server.url + ROUTE, files={"file": (name, data, content_type)}, params=params, timeout=180)


def spaced(text: str) -> str:
    """The text layer holds words one space apart: the reading's spaces at line ends and doubled ones are not kept."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n"))


def text_of(pdf: bytes) -> list[str]:
    document = pdfium.PdfDocument(pdf)
    texts = [item.get_textpage().get_text_range().replace("\r\n", "\n") for item in document]
    document.close()
    return texts


@pytest.fixture(scope="module")
def read(server, two_pages) -> dict:
    response = post(server, two_pages)
    assert response.status_code == 200, response.text
    return response.json()


def test_every_page_in_order(read, lines):
    assert read["image"] == "letters.pdf" and [page["page"] for page in read["pages"]] == [1, 2]
    first, second = read["pages"]
    assert len(first["lines"]) == len(lines) and second["lines"] == [] and first["error"] is None
    assert read["text"] == first["text"] + "\f" + second["text"]
    assert read["model_version"] and read["preprocess_ms"] > 0


def test_raw_and_base64_bodies(server, two_pages, read):
    raw = httpx.post(server.url + ROUTE, content=two_pages, headers={"content-type": "application/pdf"}, timeout=180)
    assert raw.status_code == 200, raw.text
    assert raw.json()["text"] == read["text"] and raw.json()["image"] == "document.pdf"
    encoded_body = httpx.post(server.url + ROUTE, json={"image": base64.b64encode(two_pages).decode()}, timeout=180)
    assert encoded_body.status_code == 200 and encoded_body.json()["text"] == read["text"]


def test_searchable_pdf_out_of_a_pdf_and_of_an_image(server, two_pages, page, read):
    response = post(server, two_pages, format="pdf")
    assert response.status_code == 200 and response.headers["content-type"] == "application/pdf"
    assert text_of(response.content) == [spaced(item["text"]) for item in read["pages"]]
    png = encoded(page)
    as_json = httpx.post(server.url + ROUTE, files={"file": ("page.png", png, "image/png")}, timeout=180).json()
    response = httpx.post(server.url + ROUTE, files={"file": ("page.png", png, "image/png")},
                          params={"format": "pdf"}, timeout=180)
    assert response.status_code == 200 and text_of(response.content) == [spaced(as_json["text"])]


def test_hocr_out(server, two_pages):
    response = post(server, two_pages, format="hocr")
    assert response.status_code == 200 and response.headers["content-type"] == "application/xhtml+xml"
    assert response.text.count("class=\"ocr_page\"") == 2


def test_a_page_over_the_pixel_limit_is_reported_in_its_place(server, page, tmp_path):
    mixed = scan_pdf([page, Image.new("L", (300, 400), 235)], tmp_path / "mixed.pdf").read_bytes()
    response = post(server, mixed, dpi="600")  # 4x the scan's 150 dpi: 16x the pixels, too many for page 1
    assert response.status_code == 200, response.text
    first, second = response.json()["pages"]
    assert first["width"] is None and "more than the page limit" in first["error"]
    assert second["error"] is None and second["width"] == 1200


def test_bad_pdfs(server, two_pages, tmp_path, page):
    check(post(server, encrypted_pdf(tmp_path / "locked.pdf").read_bytes()), 400, "encrypted_pdf", "encrypted")
    check(post(server, two_pages[: len(two_pages) // 3]), 400, "unreadable_pdf", "not a readable pdf")
    four = scan_pdf([Image.new("L", (300, 300), 235)] * 4, tmp_path / "four.pdf").read_bytes()
    check(post(server, four), 413, "too_many_pages", "4 pages", "limit of 3")
    check(post(server, two_pages, format="alto"), 422, "one_page_format", "2")
    check(post(server, two_pages, dpi="-3"), 422, "validation_error")
    one = scan_pdf([page], tmp_path / "one.pdf").read_bytes()
    alto = post(server, one, format="alto")
    assert alto.status_code == 200 and b"<alto" in alto.content
    check(httpx.post(server.url + ROUTE, content=b"%PDF-1.4", headers={"content-type": "application/x-pdf"},
                     timeout=30), 415, "unsupported_media_type", "application/pdf")
