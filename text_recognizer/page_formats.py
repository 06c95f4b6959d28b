"""A read page (``text_recognizer.page_reader.PageResult``) as JSON, plain text, PAGE-XML 2019 or ALTO v4.

Why one module: the CLI (``--page --format ...``) and the API give the same page in the same formats,
and the XML ones are contracts with other tools (eScriptorium, Transkribus, OCR-D, library viewers),
so they are written and checked against their schemas in one place (``tests/test_page_formats.py``).

- ``json``: ``PageResult.to_dict()``: ``{image, width, height, lines: [{id, polygon, baseline, text,
  confidence, words: [{text, confidence, polygon}]}], text}``, coordinates in page pixels, and ``language``
  (ISO 639-1) on the page and its lines when they were beam-decoded with a language's models;
- ``text``: the page's text, a line of text per found line, in reading order;
- ``page``: PAGE-XML 2019-07-15 (``PcGts``): ``Metadata``, then ``Page`` with the image's file name
  and size, one ``TextRegion`` around all lines, a ``TextLine`` per line with ``Coords`` (its polygon),
  ``Baseline``, a ``Word`` per word (``Coords``, ``TextEquiv`` with ``conf``) and the line's
  ``TextEquiv`` (``conf``, ``Unicode``); a line that could not be read has no ``TextEquiv`` and says why
  in ``comments``. PAGE points are whole non-negative pixels, so coordinates are rounded and kept on
  the page. The language goes in ``primaryLanguage`` of the ``TextRegion`` and each ``TextLine``, by the
  name PAGE's ``LanguageSimpleType`` gives it (``English``, ``French``; a code without a known name is left out);
- ``alto``: ALTO 4.4 (namespace ``ns-v4``): ``Description`` (``MeasurementUnit`` pixel, the image's
  file name, the software), ``Layout/Page/PrintSpace``, one ``TextBlock``, a ``TextLine`` per line with
  its box, ``BASELINE`` as a points list (ALTO 4.2 and later) and ``Shape/Polygon``, a ``String`` per
  word (``CONTENT``, ``WC``, its box) with ``SP`` between words. ALTO wants a ``String`` in every line:
  a line without words gets one ``String`` holding the line's text (empty for a line not read). The
  language goes in ``LANG`` (``xsd:language``: the code, ``en``) of the ``TextBlock`` and each ``TextLine``.

The XML formats need lxml (the ``page`` extra, as reading pages does); it is imported when they are
written, with a clear ``ImportError`` where it is missing.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path

from text_recognizer import __version__
from text_recognizer.decoding.language import LANGUAGES
from text_recognizer.page_result import PageLine, PageResult, Point

PAGE_NAMESPACE = "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"
PAGE_SCHEMA = f"{PAGE_NAMESPACE}/pagecontent.xsd"
ALTO_NAMESPACE = "http://www.loc.gov/standards/alto/ns-v4#"
ALTO_SCHEMA = "http://www.loc.gov/standards/alto/v4/alto-4-4.xsd"
ALTO_VERSION = "4.4"
XSI_NAMESPACE = "http://www.w3.org/2001/XMLSchema-instance"

#: Output formats for pages: the first three are printed, the XML ones are written to files.
FORMATS = ("json", "jsonl", "text", "page", "alto")
XML_FORMATS = ("page", "alto")

SOFTWARE = "text-recognizer"


def lxml_etree():
    """``lxml.etree``, or an ``ImportError`` saying how to install it."""
    try:
        from lxml import etree
    except ImportError as error:
        raise ImportError(f"PAGE-XML and ALTO output need lxml ({error}); install it with: "
                          "pip install 'text-recognizer[page]'") from error
    return etree


def page_json(result: PageResult) -> dict:
    """The page's JSON object (plain Python types, ready for ``json.dumps``)."""
    return result.to_dict()


def page_jsonl(result: PageResult) -> str:
    """The page's JSON object on one line (no line break at the end)."""
    return json.dumps(result.to_dict(), ensure_ascii=False)


def page_text(result: PageResult) -> str:
    """The page's text: the lines read, in reading order, joined by line breaks."""
    return result.text


def _utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None).isoformat()


def _clamped(points: Sequence[Point], width: int, height: int) -> list[tuple[int, int]]:
    """Whole pixels inside the page, consecutive repeats dropped (at least two points for a non-empty input)."""
    out: list[tuple[int, int]] = []
    for x, y in points:
        point = (min(max(round(x), 0), max(width - 1, 0)), min(max(round(y), 0), max(height - 1, 0)))
        if not out or out[-1] != point:
            out.append(point)
    if len(out) > 2 and out[0] == out[-1]:
        out.pop()
    if len(out) == 1:
        out.append(out[0])
    return out


def _points_text(points: Sequence[tuple[int, int]]) -> str:
    return " ".join(f"{x},{y}" for x, y in points)


def _box(points: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def _conf(value: float) -> str:
    return f"{min(max(value, 0.0), 1.0):.4f}"


def _page_language(element, code: str | None) -> None:
    """``primaryLanguage``: PAGE names languages (``French``); codes it has no name for here are left out."""
    if code in LANGUAGES:
        element.set("primaryLanguage", LANGUAGES[code][0])


def _alto_language(element, code: str | None) -> None:
    if code is not None:
        element.set("LANG", code)


def page_xml(result: PageResult, created: str | None = None) -> bytes:
    """PAGE-XML 2019-07-15 for ``result`` (UTF-8 bytes with an XML declaration); ``created``: an ISO
    timestamp in UTC for ``Metadata/Created`` and ``LastChange`` (default: now)."""
    etree = lxml_etree()
    ns = f"{{{PAGE_NAMESPACE}}}"
    root = etree.Element(f"{ns}PcGts", nsmap={None: PAGE_NAMESPACE, "xsi": XSI_NAMESPACE})
    root.set(f"{{{XSI_NAMESPACE}}}schemaLocation", f"{PAGE_NAMESPACE} {PAGE_SCHEMA}")
    metadata = etree.SubElement(root, f"{ns}Metadata")
    etree.SubElement(metadata, f"{ns}Creator").text = f"{SOFTWARE} {__version__}"
    stamp = created or _utc_now()
    etree.SubElement(metadata, f"{ns}Created").text = stamp
    etree.SubElement(metadata, f"{ns}LastChange").text = stamp
    page = etree.SubElement(root, f"{ns}Page", imageFilename=result.image, imageWidth=str(result.width),
                            imageHeight=str(result.height))
    width, height = result.width, result.height
    if result.lines:
        polygons = [_clamped(line.polygon, width, height) for line in result.lines]
        left, top, right, bottom = _box([p for polygon in polygons for p in polygon])
        region = etree.SubElement(page, f"{ns}TextRegion", id="region_1")
        _page_language(region, result.language)
        etree.SubElement(region, f"{ns}Coords",
                         points=_points_text([(left, top), (right, top), (right, bottom), (left, bottom)]))
        for line, polygon in zip(result.lines, polygons):
            element = etree.SubElement(region, f"{ns}TextLine", id=line.id)
            _page_language(element, line.language)
            if line.error is not None:
                element.set("comments", f"error: {line.error}")
            etree.SubElement(element, f"{ns}Coords", points=_points_text(polygon))
            if line.baseline:
                etree.SubElement(element, f"{ns}Baseline",
                                 points=_points_text(_clamped(line.baseline, width, height)))
            for number, word in enumerate(line.words, start=1):
                word_element = etree.SubElement(element, f"{ns}Word", id=f"{line.id}_w{number}")
                etree.SubElement(word_element, f"{ns}Coords",
                                 points=_points_text(_clamped(word.polygon, width, height)))
                equiv = etree.SubElement(word_element, f"{ns}TextEquiv", conf=_conf(word.confidence))
                etree.SubElement(equiv, f"{ns}Unicode").text = word.text
            if line.error is None:
                equiv = etree.SubElement(element, f"{ns}TextEquiv")
                if line.confidence is not None:
                    equiv.set("conf", _conf(line.confidence))
                etree.SubElement(equiv, f"{ns}Unicode").text = line.text
        equiv = etree.SubElement(region, f"{ns}TextEquiv")
        etree.SubElement(equiv, f"{ns}Unicode").text = result.text
    return etree.tostring(root, encoding="UTF-8", xml_declaration=True, pretty_print=True)


def _alto_box(element, points: Sequence[tuple[int, int]]) -> None:
    left, top, right, bottom = _box(points)
    element.set("HPOS", str(left))
    element.set("VPOS", str(top))
    element.set("WIDTH", str(right - left))
    element.set("HEIGHT", str(bottom - top))


def _alto_strings(etree, ns: str, element, line: PageLine, line_box: tuple[int, int, int, int],
                  width: int, height: int) -> None:
    """The line's words as ``String``s with ``SP`` between them (one ``String`` for a line without words)."""
    if not line.words:
        string = etree.SubElement(element, f"{ns}String", ID=f"{line.id}_w1", CONTENT=line.text)
        left, top, right, bottom = line_box
        _alto_box(string, [(left, top), (right, bottom)])
        if line.confidence is not None and line.error is None:
            string.set("WC", _conf(line.confidence))
        return
    previous_right = None
    for number, word in enumerate(line.words, start=1):
        points = _clamped(word.polygon, width, height)
        left, top, right, bottom = _box(points)
        if previous_right is not None:
            space = etree.SubElement(element, f"{ns}SP", HPOS=str(min(previous_right, left)),
                                     VPOS=str(line_box[1]), WIDTH=str(max(0, left - previous_right)))
            space.set("HEIGHT", str(line_box[3] - line_box[1]))
        string = etree.SubElement(element, f"{ns}String", ID=f"{line.id}_w{number}", CONTENT=word.text)
        _alto_box(string, points)
        string.set("WC", _conf(word.confidence))
        previous_right = right


def alto_xml(result: PageResult) -> bytes:
    """ALTO 4.4 for ``result`` (UTF-8 bytes with an XML declaration)."""
    etree = lxml_etree()
    ns = f"{{{ALTO_NAMESPACE}}}"
    root = etree.Element(f"{ns}alto", nsmap={None: ALTO_NAMESPACE, "xsi": XSI_NAMESPACE})
    root.set(f"{{{XSI_NAMESPACE}}}schemaLocation", f"{ALTO_NAMESPACE} {ALTO_SCHEMA}")
    root.set("SCHEMAVERSION", ALTO_VERSION)
    description = etree.SubElement(root, f"{ns}Description")
    etree.SubElement(description, f"{ns}MeasurementUnit").text = "pixel"
    source = etree.SubElement(description, f"{ns}sourceImageInformation")
    etree.SubElement(source, f"{ns}fileName").text = result.image
    processing = etree.SubElement(description, f"{ns}Processing", ID="processing_1")
    etree.SubElement(processing, f"{ns}processingDateTime").text = _utc_now()
    software = etree.SubElement(processing, f"{ns}processingSoftware")
    etree.SubElement(software, f"{ns}softwareName").text = SOFTWARE
    etree.SubElement(software, f"{ns}softwareVersion").text = __version__
    layout = etree.SubElement(root, f"{ns}Layout")
    width, height = result.width, result.height
    page = etree.SubElement(layout, f"{ns}Page", ID="page_1", PHYSICAL_IMG_NR="1", WIDTH=str(width),
                            HEIGHT=str(height))
    space = etree.SubElement(page, f"{ns}PrintSpace", HPOS="0", VPOS="0", WIDTH=str(width), HEIGHT=str(height))
    if not result.lines:
        return etree.tostring(root, encoding="UTF-8", xml_declaration=True, pretty_print=True)
    polygons = [_clamped(line.polygon, width, height) for line in result.lines]
    block = etree.SubElement(space, f"{ns}TextBlock", ID="block_1")
    _alto_box(block, [p for polygon in polygons for p in polygon])
    _alto_language(block, result.language)
    for line, polygon in zip(result.lines, polygons):
        element = etree.SubElement(block, f"{ns}TextLine", ID=line.id)
        _alto_box(element, polygon)
        if line.baseline:
            element.set("BASELINE", _points_text(_clamped(line.baseline, width, height)))
        _alto_language(element, line.language)
        shape = etree.SubElement(element, f"{ns}Shape")
        etree.SubElement(shape, f"{ns}Polygon", POINTS=_points_text(polygon))
        _alto_strings(etree, ns, element, line, _box(polygon), width, height)
    return etree.tostring(root, encoding="UTF-8", xml_declaration=True, pretty_print=True)


def render(result: PageResult, fmt: str) -> str | bytes:
    """``result`` in ``fmt`` (one of ``FORMATS``): text for json/jsonl/text, UTF-8 bytes for page/alto."""
    if fmt == "json":
        return json.dumps(page_json(result), indent=2, ensure_ascii=False)
    if fmt == "jsonl":
        return page_jsonl(result)
    if fmt == "text":
        return page_text(result)
    if fmt == "page":
        return page_xml(result)
    if fmt == "alto":
        return alto_xml(result)
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def write_xml(result: PageResult, fmt: str, target: str | Path) -> Path:
    """Write ``result`` as ``page`` or ``alto`` XML to ``target`` (its folder is made if needed)."""
    if fmt not in XML_FORMATS:
        raise ValueError(f"write_xml writes {XML_FORMATS}, got {fmt!r}")
    data = render(result, fmt)
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)  # type: ignore[arg-type]
    return target
