"""hOCR out: one ``ocr_page`` per page with its number, ``ocr_line`` boxes and baselines, ``ocrx_word`` boxes and
confidences, all inside the page, and the words' text in reading order."""

from __future__ import annotations

import re

import pytest

from tests.pdf.test_text_layer import LINES, reading
from text_recognizer.hocr import hocr

etree = pytest.importorskip("lxml.etree")
XHTML = "{http://www.w3.org/1999/xhtml}"


def numbers(title: str, key: str) -> list[float]:
    match = re.search(rf"{key} ([-\d. ]+)", title)
    assert match, (key, title)
    return [float(value) for value in match.group(1).split()]


def test_pages_lines_and_words():
    result = reading()
    root = etree.fromstring(hocr([(result, 3), (result, 4)], language="fr"))
    pages = root.findall(f".//{XHTML}div[@class='ocr_page']")
    assert [numbers(page.get("title"), "ppageno") for page in pages] == [[2], [3]]
    assert numbers(pages[0].get("title"), "bbox") == [0, 0, result.width, result.height]
    lines = pages[0].findall(f".//{XHTML}span[@class='ocr_line']")
    assert len(lines) == len(LINES)
    for element, line in zip(lines, result.lines):
        words = element.findall(f"{XHTML}span[@class='ocrx_word']")
        assert [word.text for word in words] == line.text.split(" ")
        assert "".join(element.itertext()) == line.text
        slope, offset = numbers(element.get("title"), "baseline")
        left, top, right, bottom = numbers(element.get("title"), "bbox")
        assert slope == pytest.approx(0) and bottom + offset == pytest.approx(line.baseline[0][1], abs=1)
        for word, read in zip(words, line.words):
            assert numbers(word.get("title"), "bbox") == [round(value) for value in read.box]
            assert numbers(word.get("title"), "x_wconf") == [90]
    assert root.get("lang") == "fr"


def test_lines_without_words_are_one_word_and_failed_lines_are_left_out():
    from dataclasses import replace

    result = reading()
    lines = (replace(result.lines[0], words=()), replace(result.lines[1], text="", error="cannot read"))
    root = etree.fromstring(hocr([(replace(result, lines=lines), None)]))
    (line,) = root.findall(f".//{XHTML}p[@class='ocr_par']/{XHTML}span[@class='ocr_line']")
    (word,) = line.findall(f"{XHTML}span[@class='ocrx_word']")
    assert word.text == result.lines[0].text and numbers(word.get("title"), "bbox") == numbers(line.get("title"),
                                                                                              "bbox")
