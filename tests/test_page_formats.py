"""A read page as JSON, text, PAGE-XML 2019 and ALTO 4.4: the XML valid against the official schemas
(``tests/fixtures/schemas``, offline), readable by our own layout reader, and the edge cases (a line
not read, a line without words, a page without lines, points off the page) still valid."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from text_recognizer.data.layout import read_layout
from text_recognizer.page_formats import alto_xml, page_json, page_xml, render, write_xml
from text_recognizer.page_result import PageLine, PageResult, PageWord

etree = pytest.importorskip("lxml.etree")

SCHEMAS = Path(__file__).parent / "fixtures" / "schemas"
XSD = "http://www.w3.org/2001/XMLSchema"


@cache
def page_schema():
    return etree.XMLSchema(etree.parse(str(SCHEMAS / "pagecontent.xsd")))


@cache
def alto_schema():
    tree = etree.parse(str(SCHEMAS / "alto-4-4.xsd"))
    for element in tree.getroot().iter(f"{{{XSD}}}import"):  # the XLink schema: the local copy, not the web
        if element.get("namespace") == "http://www.w3.org/1999/xlink":
            element.set("schemaLocation", (SCHEMAS / "xlink.xsd").as_uri())
    return etree.XMLSchema(tree)


def assert_valid(schema, data: bytes) -> None:
    document = etree.fromstring(data)
    assert schema.validate(document), "\n".join(str(e) for e in schema.error_log)


def sample_page() -> PageResult:
    word = PageWord("hello", 0.91, ((100.4, 50.0), (180.0, 50.0), (180.0, 80.0), (100.4, 80.0)))
    other = PageWord("world", 0.5, ((195.0, 52.0), (260.0, 52.0), (260.0, 81.0), (195.0, 81.0)))
    lines = (
        PageLine("line_1", ((90.0, 40.0), (270.0, 40.0), (270.0, 90.0), (90.0, 90.0)),
                 ((90.0, 78.0), (270.0, 79.0)), "hello world", 0.8, (word, other)),
        # a line read without word positions (the per-window baseline model has none)
        PageLine("line_2", ((90.0, 100.0), (270.0, 100.0), (270.0, 150.0), (90.0, 150.0)),
                 ((90.0, 140.0), (270.0, 140.0)), "no words", 0.7),
        # a line that could not be cut; its points reach off the page
        PageLine("line_3", ((-5.0, 160.0), (420.0, 160.0), (420.0, 210.0), (-5.0, 210.0)),
                 ((-5.0, 200.0), (420.0, 200.0)), error="cannot cut the line: polygon has no area"),
        # read, nothing found in it
        PageLine("line_4", ((90.0, 220.0), (270.0, 220.0), (270.0, 260.0)), ((90.0, 250.0), (270.0, 250.0)), "", 0.1),
    )
    return PageResult("pages/letter & <1>.png", 400, 300, lines)


def test_json_keys_and_text():
    record = page_json(sample_page())
    assert list(record) == ["image", "width", "height", "lines", "text"]
    assert [list(line) for line in record["lines"]][:2] == [
        ["id", "polygon", "baseline", "text", "confidence", "words"]] * 2
    assert list(record["lines"][2]) == ["id", "polygon", "baseline", "text", "confidence", "words", "error"]
    assert record["lines"][2]["confidence"] is None and record["lines"][2]["text"] == ""
    assert list(record["lines"][0]["words"][0]) == ["text", "confidence", "polygon"]
    assert record["lines"][0]["words"][0]["polygon"][0] == [100.4, 50.0]
    assert record["text"] == "hello world\nno words\n"  # the line not read is left out, the empty one kept
    assert json.loads(render(sample_page(), "json")) == record
    assert json.loads(render(sample_page(), "jsonl")) == record and "\n" not in render(sample_page(), "jsonl")
    assert render(sample_page(), "text") == record["text"]
    with pytest.raises(ValueError, match="format must be one of"):
        render(sample_page(), "hocr")


def test_page_xml_is_valid_and_reads_back(tmp_path):
    data = page_xml(sample_page())
    assert_valid(page_schema(), data)
    root = etree.fromstring(data)
    ns = {"pc": "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"}
    page = root.find("pc:Page", ns)
    assert (page.get("imageFilename"), page.get("imageWidth"), page.get("imageHeight")) == (
        "pages/letter & <1>.png", "400", "300")
    lines = root.findall(".//pc:TextLine", ns)
    assert [line.get("id") for line in lines] == ["line_1", "line_2", "line_3", "line_4"]
    assert lines[0].find("pc:TextEquiv", ns).get("conf") == "0.8000"
    words = lines[0].findall("pc:Word", ns)
    assert [w.findtext("pc:TextEquiv/pc:Unicode", namespaces=ns) for w in words] == ["hello", "world"]
    assert words[0].find("pc:TextEquiv", ns).get("conf") == "0.9100"
    assert words[0].find("pc:Coords", ns).get("points") == "100,50 180,50 180,80 100,80"
    assert lines[2].find("pc:TextEquiv", ns) is None and lines[2].get("comments").startswith("error: cannot cut")
    assert lines[2].find("pc:Coords", ns).get("points") == "0,160 399,160 399,210 0,210"  # kept on the page
    layout = read_layout(write_xml(sample_page(), "page", tmp_path / "out" / "letter.xml"))
    assert [(line.id, line.text) for line in layout.lines] == [
        ("line_1", "hello world"), ("line_2", "no words"), ("line_3", None), ("line_4", "")]
    assert layout.lines[0].polygon == [(90, 40), (270, 40), (270, 90), (90, 90)]
    assert layout.lines[0].baseline == [(90, 78), (270, 79)]


def test_alto_is_valid_and_reads_back(tmp_path):
    data = alto_xml(sample_page())
    assert_valid(alto_schema(), data)
    root = etree.fromstring(data)
    ns = {"a": "http://www.loc.gov/standards/alto/ns-v4#"}
    assert root.findtext("a:Description/a:MeasurementUnit", namespaces=ns) == "pixel"
    assert root.findtext("a:Description/a:sourceImageInformation/a:fileName", namespaces=ns) == "pages/letter & <1>.png"
    page = root.find("a:Layout/a:Page", ns)
    assert (page.get("WIDTH"), page.get("HEIGHT")) == ("400", "300")
    lines = page.findall("a:PrintSpace/a:TextBlock/a:TextLine", ns)
    assert [line.get("ID") for line in lines] == ["line_1", "line_2", "line_3", "line_4"]
    first = lines[0]
    assert first.get("BASELINE") == "90,78 270,79"
    assert first.find("a:Shape/a:Polygon", ns).get("POINTS") == "90,40 270,40 270,90 90,90"
    assert [etree.QName(child).localname for child in first] == ["Shape", "String", "SP", "String"]
    hello = first.find("a:String", ns)
    assert {k: hello.get(k) for k in ("CONTENT", "WC", "HPOS", "VPOS", "WIDTH", "HEIGHT")} == {
        "CONTENT": "hello", "WC": "0.9100", "HPOS": "100", "VPOS": "50", "WIDTH": "80", "HEIGHT": "30"}
    space = first.find("a:SP", ns)
    assert (space.get("HPOS"), space.get("WIDTH")) == ("180", "15")
    assert [s.get("CONTENT") for s in lines[1].findall("a:String", ns)] == ["no words"]  # one String: the line
    assert [s.get("CONTENT") for s in lines[2].findall("a:String", ns)] == [""]  # not read: empty
    layout = read_layout(write_xml(sample_page(), "alto", tmp_path / "letter.xml"))
    assert [line.id for line in layout.lines] == ["line_1", "line_2", "line_3", "line_4"]
    assert layout.lines[0].text == "hello world"
    assert layout.lines[0].baseline == [(90, 78), (270, 79)]


@pytest.mark.parametrize("fmt", ["page", "alto"])
def test_a_page_without_lines_is_valid(fmt):
    empty = PageResult("blank.png", 800, 1000)
    data = render(empty, fmt)
    assert_valid(page_schema() if fmt == "page" else alto_schema(), data)
    assert b"TextLine" not in data


def test_write_xml_only_writes_xml(tmp_path):
    with pytest.raises(ValueError, match="write_xml writes"):
        write_xml(sample_page(), "json", tmp_path / "x.json")


def test_the_language_is_in_every_format():
    """Beam-decoded pages carry their language: JSON ``language`` on the page and its lines, PAGE-XML
    ``primaryLanguage`` (PAGE's names) on the region and lines, ALTO ``LANG`` (the code) on the block and lines;
    a code PAGE has no name for here is left out of PAGE; greedy pages (no language) have none. All still valid."""
    import dataclasses

    base = sample_page()
    lines = tuple(dataclasses.replace(line, language="fr") for line in base.lines[:2]) + base.lines[2:3] + (
        dataclasses.replace(base.lines[3], language="qq"),)
    page = dataclasses.replace(base, lines=lines, language="fr")
    record = page_json(page)
    assert list(record) == ["image", "width", "height", "language", "lines", "text"] and record["language"] == "fr"
    assert [line.get("language") for line in record["lines"]] == ["fr", "fr", None, "qq"]
    assert list(record["lines"][0]) == ["id", "polygon", "baseline", "text", "confidence", "words", "language"]
    data = page_xml(page)
    assert_valid(page_schema(), data)
    ns = {"pc": "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"}
    root = etree.fromstring(data)
    assert root.find(".//pc:TextRegion", ns).get("primaryLanguage") == "French"
    assert [line.get("primaryLanguage") for line in root.findall(".//pc:TextLine", ns)] == ["French", "French",
                                                                                             None, None]
    data = alto_xml(page)
    assert_valid(alto_schema(), data)
    ns = {"a": "http://www.loc.gov/standards/alto/ns-v4#"}
    root = etree.fromstring(data)
    assert root.find(".//a:TextBlock", ns).get("LANG") == "fr"
    assert [line.get("LANG") for line in root.findall(".//a:TextLine", ns)] == ["fr", "fr", None, "qq"]
    english = dataclasses.replace(page, language="en", lines=tuple(dataclasses.replace(line, language="en")
                                                                   for line in base.lines))
    assert b'primaryLanguage="English"' in page_xml(english) and b'LANG="en"' in alto_xml(english)
    assert b"primaryLanguage" not in page_xml(base) and b"LANG" not in alto_xml(base)
    assert "language" not in page_json(base)
