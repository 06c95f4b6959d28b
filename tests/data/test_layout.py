"""Tests for text_recognizer.data.layout: PAGE 2013/2019 and ALTO v2-v4 files written by the tests."""

from __future__ import annotations

import pytest

from tests.data.layout_pages import PAGE_2013, PAGE_2019, TEXTS, alto_xml, page_xml, write_page_folder
from text_recognizer.data.layout import LayoutError, parse_points, read_layout


@pytest.mark.parametrize("namespace, version", [(PAGE_2013, "2013-07-15"), (PAGE_2019, "2019-07-15")])
def test_page_lines_texts_polygons_baselines(tmp_path, namespace, version):
    drawn = write_page_folder(tmp_path, "page", namespace=namespace)
    layout = read_layout(tmp_path / "page1.xml")
    assert (layout.format, layout.version) == ("page", version)
    assert (layout.image_name, layout.image_size) == ("page1.png", (1000, 420))
    assert [line.id for line in layout.lines] == ["l0", "l1", "l2"]
    assert [line.text for line in layout.lines] == list(TEXTS)
    assert [line.polygon for line in layout.lines] == [d.polygon for d in drawn]
    assert [line.baseline for line in layout.lines] == [d.baseline for d in drawn]
    assert layout.find_image() == tmp_path / "page1.png"


@pytest.mark.parametrize("version", [2, 3, 4])
def test_alto_lines(tmp_path, version):
    drawn = write_page_folder(tmp_path, "alto", version=version)
    layout = read_layout(tmp_path / "page1.xml")
    assert (layout.format, layout.version, layout.image_name) == ("alto", f"v{version}", "page1.png")
    assert [line.text for line in layout.lines] == list(TEXTS)
    assert [line.polygon for line in layout.lines] == [d.polygon for d in drawn]
    assert [line.baseline for line in layout.lines] == ([d.baseline for d in drawn] if version == 4 else [None] * 3)


def test_alto_box_without_shape_hyphen_and_missing_text(tmp_path):
    xml = alto_xml("p.png", (100, 100), [{"id": "a", "text": "one two", "box": (5, 6, 50, 20)},
                                         {"id": "b", "text": "", "box": (5, 40, 50, 20)}], version=3)
    xml = xml.replace('<String CONTENT="two"/>', '<String CONTENT="two"/><HYP CONTENT="-"/>')
    (tmp_path / "p.xml").write_text(xml)
    first, second = read_layout(tmp_path / "p.xml").lines
    assert first.text == "one two-" and first.polygon == [(5, 6), (55, 6), (55, 26), (5, 26)]
    assert second.text is None


def test_page_text_choice_words_fallback_and_broken_coords(tmp_path):
    xml = page_xml("p.png", (100, 100), [{"id": "a", "text": "x", "points": "1,1 9,1 9,9"},
                                         {"id": "b", "text": None, "points": "1,1 9,1 9"},
                                         {"id": "c", "text": None, "points": None}])
    xml = xml.replace("<TextEquiv><Unicode>x</Unicode></TextEquiv>",
                      '<TextEquiv index="2"><Unicode>second</Unicode></TextEquiv>'
                      '<TextEquiv index="1"><Unicode>first</Unicode></TextEquiv>')
    words = "".join(f'<Word id="w{i}"><Coords points="1,1 2,1 2,2"/>'
                    f"<TextEquiv><Unicode>{word}</Unicode></TextEquiv></Word>"
                    for i, word in enumerate(["Grüße", "aus"]))
    xml = xml.replace('<Coords points="1,1 9,1 9"/>', '<Coords points="1,1 9,1 9"/>' + words)
    (tmp_path / "p.xml").write_text(xml, encoding="utf-8")
    a, b, c = read_layout(tmp_path / "p.xml").lines
    assert a.text == "first" and a.polygon_error is None
    assert b.text == "Grüße aus" and b.polygon is None and "odd count" in b.polygon_error
    assert c.polygon is None and c.polygon_error == "TextLine has no Coords"


def test_wrong_namespace_malformed_and_units(tmp_path):
    wrong = tmp_path / "wrong.xml"
    wrong.write_text(page_xml("p.png", (10, 10), [], namespace="http://example.com/not-page"))
    with pytest.raises(LayoutError, match="neither PAGE-XML"):
        read_layout(wrong)
    old = tmp_path / "old.xml"
    old.write_text(page_xml("p.png", (10, 10), [], namespace=PAGE_2013.replace("2013-07-15", "2005")))
    with pytest.raises(LayoutError, match="version '2005' is not supported"):
        read_layout(old)
    broken = tmp_path / "broken.xml"
    broken.write_text("<PcGts><Page>")
    with pytest.raises(LayoutError, match="broken.xml: not well-formed XML"):
        read_layout(broken)
    mm = tmp_path / "mm.xml"
    mm.write_text(alto_xml("p.png", (10, 10), [], version=2).replace(">pixel<", ">mm10<"))
    with pytest.raises(LayoutError, match="MeasurementUnit 'mm10'"):
        read_layout(mm)
    with pytest.raises(LayoutError, match="cannot read"):
        read_layout(tmp_path / "missing.xml")


def test_external_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    xml = page_xml("p.png", (10, 10), [{"id": "a", "text": "&xxe;", "points": "1,1 9,1 9,9"}])
    xml = xml.replace("&amp;xxe;", "&xxe;").replace(
        "<PcGts", f'<!DOCTYPE PcGts [<!ENTITY xxe SYSTEM "file://{secret}">]>\n<PcGts', 1)
    (tmp_path / "p.xml").write_text(xml)
    (line,) = read_layout(tmp_path / "p.xml").lines
    assert "TOP SECRET" not in (line.text or "")


def test_parse_points_formats():
    assert parse_points("1,2 3,4") == [(1, 2), (3, 4)]
    assert parse_points("1 2 3 4") == [(1, 2), (3, 4)]
    assert parse_points("  ") == []
    with pytest.raises(ValueError, match="not numbers"):
        parse_points("1,a")
    with pytest.raises(ValueError, match="not finite"):
        parse_points("1,inf 2,2")


def test_image_found_by_file_name_when_path_is_foreign(tmp_path):
    write_page_folder(tmp_path)
    xml = tmp_path / "page1.xml"
    xml.write_text(xml.read_text().replace('imageFilename="page1.png"', 'imageFilename="C:\\scans\\page1.png"'))
    assert read_layout(xml).find_image() == tmp_path / "page1.png"
