"""hOCR out: the pages read as one XHTML file that hOCR tools (hocr-tools, hocr-pdf, OCRmyPDF's hOCR renderer,
search engines' OCR importers) take.

Why hOCR beside PAGE-XML and ALTO: it is what print OCR (Tesseract) writes, so the tools that put OCR into PDFs,
viewers and search indexes read it. Each page is an ``ocr_page`` (its image and page number), each line an
``ocr_line`` (box, and its baseline as hOCR's slope and offset), each word an ``ocrx_word`` with its box and
``x_wconf`` (the confidence in percent), inside one ``ocr_carea`` and ``ocr_par`` per page as Tesseract writes them
(OCRmyPDF's hOCR reader wants the paragraph); a line read without word positions is one word over the line's box.
"""

from __future__ import annotations

from collections.abc import Sequence

from text_recognizer.page_result import PageLine, PageResult, PageWord


def _bbox(box: tuple[float, float, float, float], width: int, height: int) -> str:
    left, top, right, bottom = box
    clamp = lambda value, high: min(max(int(round(value)), 0), high)  # noqa: E731
    return f"bbox {clamp(left, width)} {clamp(top, height)} {clamp(right, width)} {clamp(bottom, height)}"


def _baseline(line: PageLine, box: tuple[float, float, float, float]) -> str:
    """hOCR's ``baseline slope offset``: offset from the box's bottom left corner, y down, as Tesseract writes it."""
    if len(line.baseline) < 2:
        return ""
    (x0, y0), (x1, y1) = line.baseline[0], line.baseline[-1]
    slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
    offset = (y0 + slope * (box[0] - x0)) - box[3]
    return f"; baseline {slope:.4f} {offset:.0f}"


def hocr(pages: Sequence[tuple[PageResult, int | None]], language: str | None = None) -> bytes:
    """The XHTML document for ``pages`` (each a result and its page number, or None for 1, 2, ...)."""
    from lxml import etree

    ns = "http://www.w3.org/1999/xhtml"
    html = etree.Element(f"{{{ns}}}html", nsmap={None: ns})
    if language:
        html.set("lang", language)
        html.set("{http://www.w3.org/XML/1998/namespace}lang", language)
    head = etree.SubElement(html, f"{{{ns}}}head")
    etree.SubElement(head, f"{{{ns}}}title").text = "text_recognizer hOCR"
    etree.SubElement(head, f"{{{ns}}}meta", {"http-equiv": "Content-Type", "content": "text/html; charset=utf-8"})
    etree.SubElement(head, f"{{{ns}}}meta", name="ocr-system", content="text_recognizer")
    etree.SubElement(head, f"{{{ns}}}meta", name="ocr-capabilities",
                     content="ocr_page ocr_carea ocr_line ocrx_word ocrp_wconf")
    body = etree.SubElement(html, f"{{{ns}}}body")
    for index, (result, number) in enumerate(pages, start=1):
        page_number = number if number is not None else index
        size = (0, 0, result.width, result.height)
        page = etree.SubElement(body, f"{{{ns}}}div", {"class": "ocr_page", "id": f"page_{page_number}",
                                                       "title": f'image "{result.image}"; '
                                                                f"{_bbox(size, result.width, result.height)}; "
                                                                f"ppageno {page_number - 1}"})
        area = etree.SubElement(page, f"{{{ns}}}div", {"class": "ocr_carea", "id": f"block_{page_number}_1",
                                                       "title": _bbox(size, result.width, result.height)})
        paragraph = etree.SubElement(area, f"{{{ns}}}p", {"class": "ocr_par", "id": f"par_{page_number}_1",
                                                          "title": _bbox(size, result.width, result.height)})
        if language:
            paragraph.set("lang", language)
        for line in result.lines:
            if line.error is not None:
                continue
            box = line.box
            element = etree.SubElement(paragraph, f"{{{ns}}}span", {
                "class": "ocr_line", "id": f"{line.id}_{page_number}",
                "title": _bbox(box, result.width, result.height) + _baseline(line, box)})
            if line.language:
                element.set("lang", line.language)
            words = line.words or (PageWord(line.text.strip(), line.confidence or 0.0, line.polygon),)
            for number_in_line, word in enumerate(words, start=1):
                span = etree.SubElement(element, f"{{{ns}}}span", {
                    "class": "ocrx_word", "id": f"word_{page_number}_{line.id}_{number_in_line}",
                    "title": f"{_bbox(word.box, result.width, result.height)}; "
                             f"x_wconf {int(round(100 * word.confidence))}"})
                span.text = word.text
                span.tail = " " if number_in_line < len(words) else None
    doctype = ('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" '
               '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">')
    return etree.tostring(html, xml_declaration=True, encoding="UTF-8", pretty_print=True, doctype=doctype)
