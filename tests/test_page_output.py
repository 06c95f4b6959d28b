"""Tests for text_recognizer.page_output and ``--page-xml``: recognised text written into PAGE files
made by the tests, checked against the structure that was read."""

from __future__ import annotations

import copy

import pytest
from lxml import etree

from tests.data.layout_pages import PAGE_2013, write_page_folder
from text_recognizer.data.layout import LayoutError, read_layout
from text_recognizer.metrics import cer
from text_recognizer.page_output import set_line_text, transcribe_page, write_page
from text_recognizer.recognizer import LineRecognizer, main


@pytest.fixture(scope="module")
def recognizer() -> LineRecognizer:
    return LineRecognizer()


def _kraken_like(folder, namespace=PAGE_2013):
    """A page whose lines carry old text, a Word, and TextStyle/UserDefined after the TextEquiv."""
    drawn = write_page_folder(folder, namespace=namespace, extra_lines=[
        {"id": "broken", "text": "keep me", "points": "600,40 900,40"}])
    xml = folder / "page1.xml"
    text = xml.read_text()
    text = text.replace("<TextEquiv><Unicode>hello world</Unicode></TextEquiv>",
                        '<Word id="w0"><Coords points="40,30 100,30 100,90"/></Word>'
                        "<TextEquiv><Unicode>old text</Unicode></TextEquiv>"
                        '<TextStyle fontSize="12"/><UserDefined><UserAttribute name="k" value="v"/></UserDefined>')
    text = text.replace("</TextRegion>", "<TextEquiv conf=\"0.5\"><Unicode>stale region text</Unicode></TextEquiv>"
                        "</TextRegion>")
    xml.write_text(text)
    return xml, drawn


def _without_line_text(tree) -> bytes:
    """The tree with the TextEquiv of every TextLine and TextRegion and the LastChange removed, canonicalised."""
    tree = copy.deepcopy(tree)
    root = tree.getroot()
    ns = etree.QName(root).namespace
    for element in [*root.iter(f"{{{ns}}}TextLine"), *root.iter(f"{{{ns}}}TextRegion")]:
        for equiv in element.findall(f"{{{ns}}}TextEquiv"):
            element.remove(equiv)
    for change in root.iter(f"{{{ns}}}LastChange"):
        change.text = ""
    return etree.tostring(tree, method="c14n")


def test_transcribed_page_keeps_its_structure(recognizer, tmp_path):
    xml, drawn = _kraken_like(tmp_path / "in")
    before = read_layout(xml)
    result = transcribe_page(recognizer, xml)
    target = write_page(result.layout, tmp_path / "out" / "page1.xml")
    after = read_layout(target)
    assert after.version == "2013-07-15"
    assert [line.id for line in after.lines] == [line.id for line in before.lines]
    assert [line.polygon for line in after.lines] == [line.polygon for line in before.lines]
    assert [line.baseline for line in after.lines] == [line.baseline for line in before.lines]
    assert _without_line_text(after.tree) == _without_line_text(before.tree)
    texts = [line.text for line in after.lines]
    assert texts[:3] == [result.texts[f"l{i}"].text for i in range(3)]
    assert cer([d.text for d in drawn], texts[:3]) < 0.3
    assert texts[3] == "keep me"
    assert result.problems == [("broken", "bad polygon: polygon has 2 point(s), needs at least 3")]
    first = after.lines[0].element
    names = [etree.QName(child).localname for child in first]
    assert names == ["Coords", "Baseline", "Word", "TextEquiv", "TextStyle", "UserDefined"]
    equiv = first.find(f"{{{PAGE_2013}}}TextEquiv")
    assert 0 < float(equiv.get("conf")) <= 1
    assert len(first.findall(f"{{{PAGE_2013}}}TextEquiv")) == 1  # "old text" was replaced
    region = after.tree.getroot().find(f".//{{{PAGE_2013}}}TextRegion")
    region_text = region.findtext(f"{{{PAGE_2013}}}TextEquiv/{{{PAGE_2013}}}Unicode")
    assert region_text == "\n".join(texts) and region.find(f"{{{PAGE_2013}}}TextEquiv").get("conf") is None


def test_set_line_text_keeps_a_prefixed_namespace():
    root = etree.fromstring(f'<pc:PcGts xmlns:pc="{PAGE_2013}"><pc:Page><pc:TextLine id="a">'
                            f'<pc:Coords points="1,1 5,1 5,5"/></pc:TextLine></pc:Page></pc:PcGts>')
    line = root.find(f".//{{{PAGE_2013}}}TextLine")
    set_line_text(line, "Grüße & <Tschüss>", 0.5)
    out = etree.tostring(root, encoding="unicode")
    assert '<pc:TextEquiv conf="0.5000"><pc:Unicode>Grüße &amp; &lt;Tschüss&gt;</pc:Unicode></pc:TextEquiv>' in out
    with pytest.raises(ValueError, match="must be a PAGE TextLine"):
        set_line_text(root, "x")


def test_alto_and_missing_image_are_refused(recognizer, tmp_path):
    write_page_folder(tmp_path / "alto", "alto")
    with pytest.raises(LayoutError, match="writes PAGE files; this is ALTO v4"):
        transcribe_page(recognizer, tmp_path / "alto" / "page1.xml")
    write_page_folder(tmp_path / "missing")
    (tmp_path / "missing" / "page1.png").unlink()
    with pytest.raises(LayoutError, match="page image missing"):
        transcribe_page(recognizer, tmp_path / "missing" / "page1.xml")


def test_cli_page_xml_folder(tmp_path, capsys):
    folder = tmp_path / "pages"
    write_page_folder(folder, stem="a")
    write_page_folder(folder, stem="b")
    (folder / "b.png").unlink()
    status = main(["--page-xml", str(folder), "--output-dir", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert status == 1
    assert f"{folder / 'a.xml'} -> {tmp_path / 'out' / 'a.xml'} (3 of 3 lines)" in out
    assert "b.xml: page image missing" in err
    written = [line.text for line in read_layout(tmp_path / "out" / "a.xml").lines]
    assert cer(["hello world", "seven cats", "move the tables"], written) < 0.3
    assert not (tmp_path / "out" / "b.xml").exists()
    assert main(["--page-xml", str(folder / "a.xml"), "--output-dir", str(folder)]) == 1
    assert "would overwrite the input" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--page-xml", str(folder)])
    assert "needs --output-dir" in capsys.readouterr().err
