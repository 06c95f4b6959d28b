"""Searchable PDFs: the text copied out of the written PDF (by PDFium, as a viewer does) is the reading, line by
line; each word's characters lie on the word's measured box; the page looks exactly as before (the layer is
invisible); a PDF's page and a JPEG's bytes are kept as they were."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.pdf.make import composed_page, scan_pdf
from text_recognizer.page_result import PageLine, PageResult, PageWord
from text_recognizer.pdf.text_layer import PageSource, searchable_pdf

pdfium = pytest.importorskip("pypdfium2")

WIDTH, HEIGHT = 1200, 900
LINES = [  # (text of each word, left x of each word, baseline y): the words' boxes are built from these
    (["Très", "chère", "sœur,"], [100, 260, 450], 150),
    (["l'œuvre", "ſera", "finie", "–", "1905"], [100, 380, 560, 760, 830], 260),
    (["Ainsi", "soit-il."], [300, 520], 370),
]


def reading() -> PageResult:
    """A page read as a model would have: three lines, words with boxes 40 px wide a letter."""
    lines = []
    for number, (words, lefts, baseline) in enumerate(LINES, start=1):
        placed = []
        for text, left in zip(words, lefts):
            right = left + 36 * len(text)
            placed.append(PageWord(text, 0.9, ((left, baseline - 60), (right, baseline - 60), (right, baseline + 18),
                                               (left, baseline + 18))))
        box = ((lefts[0] - 5, baseline - 70), (placed[-1].box[2] + 5, baseline - 70),
               (placed[-1].box[2] + 5, baseline + 25), (lefts[0] - 5, baseline + 25))
        lines.append(PageLine(f"line_{number}", box, ((lefts[0], baseline), (placed[-1].box[2], baseline)),
                              " ".join(words), 0.9, tuple(placed)))
    return PageResult("page.png", WIDTH, HEIGHT, tuple(lines))


@pytest.fixture(scope="module")
def image_page(tmp_path_factory):
    path = tmp_path_factory.mktemp("pages") / "page.png"
    page = Image.new("L", (WIDTH, HEIGHT), 230)
    page.paste(0, (100, 100, 300, 140))  # some ink, so that a visible layer would show
    page.save(path, dpi=(200, 200))
    return path


def extracted(data: bytes) -> list[str]:
    document = pdfium.PdfDocument(data)
    texts = [page.get_textpage().get_text_range().replace("\r\n", "\n") for page in document]
    document.close()
    return texts


def test_the_copied_text_is_the_reading(image_page):
    result = reading()
    assert extracted(searchable_pdf([(PageSource(image_page), result)])) == [result.text]


def test_each_word_lies_on_its_box(image_page):
    """Characters' boxes (PDF points) mapped back to page pixels: a word's first and last characters span the word's
    box within 2 px, and its characters' middles are inside the word's box."""
    result = reading()
    document = pdfium.PdfDocument(searchable_pdf([(PageSource(image_page), result)]))
    page = document[0]
    scale = 200 / 72  # page pixels per point: the image is at 200 dpi
    height = page.get_size()[1]
    text_page = page.get_textpage()
    full = text_page.get_text_range()
    at = 0
    for line in result.lines:
        for word in line.words:
            at = full.index(word.text, at)
            boxes = [text_page.get_charbox(at + i, loose=True) for i in range(len(word.text))]
            at += len(word.text)
            left, top, right, bottom = word.box
            assert boxes[0][0] * scale == pytest.approx(left, abs=2)
            assert boxes[-1][2] * scale == pytest.approx(right, abs=2)
            for box in boxes:
                middle_y = height - (box[1] + box[3]) / 2
                assert top <= middle_y * scale <= bottom
    document.close()


def test_the_layer_is_invisible_and_the_image_lossless(image_page):
    document = pdfium.PdfDocument(searchable_pdf([(PageSource(image_page), reading())]))
    shown = np.asarray(document[0].render(scale=200 / 72, grayscale=True).to_pil().convert("L"), dtype=int)
    document.close()
    original = np.asarray(Image.open(image_page), dtype=int)
    assert shown.shape == original.shape and np.abs(shown - original).max() <= 1


def test_a_jpeg_goes_in_byte_for_byte(tmp_path):
    path = tmp_path / "photo.jpg"
    composed_page().convert("RGB").save(path, quality=85)
    result = PageResult(str(path), *Image.open(path).size)
    document = pdfium.PdfDocument(searchable_pdf([(PageSource(path), result)]))
    (picture,) = list(document[0].get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE]))
    assert picture.get_filters() == ["DCTDecode"]
    assert bytes(picture.get_data(decode_simple=False)) == path.read_bytes()
    document.close()


def test_a_pdf_page_is_kept_as_it_was(tmp_path):
    """The page of a PDF in: same size, same image stream, same look, one more (invisible) layer of text."""
    original = scan_pdf([composed_page(), composed_page().rotate(90, expand=True)], tmp_path / "in.pdf")
    source = pdfium.PdfDocument(original)
    sizes = [page.get_size() for page in source]
    streams = [bytes(next(iter(page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE]))).get_data(
        decode_simple=False)) for page in source]
    looks = [np.asarray(page.render(scale=1).to_pil()) for page in source]
    read = reading()
    data = searchable_pdf([(PageSource(original, 0), None), (PageSource(original, 1), read)])
    source.close()
    out = pdfium.PdfDocument(data)
    assert [page.get_size() for page in out] == sizes
    for number, page in enumerate(out):
        (picture,) = list(page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE]))
        assert bytes(picture.get_data(decode_simple=False)) == streams[number]
        assert np.array_equal(np.asarray(page.render(scale=1).to_pil()), looks[number])
    out.close()
    assert extracted(data)[0] == ""


def test_an_image_page_needs_its_reading(image_page):
    with pytest.raises(ValueError, match="needs its reading"):
        searchable_pdf([(PageSource(image_page), None)])
    with pytest.raises(ValueError, match="at least one page"):
        searchable_pdf([])
