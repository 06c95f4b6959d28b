"""Transcribe a segmented page: recognise every TextLine of a PAGE-XML file and write the text back.

Why: kraken and eScriptorium segment pages into line polygons and baselines but need a recognizer
for the text; Transkribus and OCR-D exchange the result as PAGE-XML. This module cuts each line out
exactly as training does (``text_recognizer.data.linecut``), reads it with a ``LineRecognizer`` and
puts the text into the line's ``TextEquiv`` (replacing what was there), with the confidence as
``conf``, and, when it was beam-decoded with a language's models, that language as the line's
``primaryLanguage`` (the page's lines are read together: ``auto`` chooses one language for the page).
Everything else in the file (regions, reading order, words, custom attributes, the namespace prefixes)
is left as it was read: lxml edits the parsed tree in place.

The new ``TextEquiv`` goes where the PAGE schema wants it in a ``TextLine``: after
``AlternativeImage``, ``Coords``, ``Baseline`` and ``Word``, before ``TextStyle``, ``UserDefined``
and ``Labels``. A ``TextRegion`` that has its own ``TextEquiv`` gets its lines' texts joined by line
breaks. ``Metadata/LastChange`` is set to the time of writing, as the schema asks.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from text_recognizer.data.folder import open_image
from text_recognizer.data.layout import LayoutError, PageLayout, read_layout
from text_recognizer.data.linecut import cut_line, page_gray, polygon_problem
from text_recognizer.decoding.greedy import DecodedLine
from text_recognizer.decoding.language import LANGUAGES

#: TextLine children that come before TextEquiv in the PAGE schema (2013 and 2019).
_BEFORE_TEXT_EQUIV = ("AlternativeImage", "Coords", "Baseline", "Word")


@dataclass
class PageTranscription:
    """A transcribed PAGE file: the layout (its tree now holds the new texts) and per-line outcomes."""

    layout: PageLayout
    texts: dict[str, DecodedLine] = field(default_factory=dict)  # line id -> recognised line
    problems: list[tuple[str, str]] = field(default_factory=list)  # (line id, reason): left unchanged


def set_line_text(line_element, text: str, confidence: float | None = None) -> None:
    """Replace a PAGE ``TextLine``'s own ``TextEquiv`` elements by one holding ``text``."""
    namespace = etree.QName(line_element).namespace
    if etree.QName(line_element).localname != "TextLine":
        raise ValueError(f"line_element must be a PAGE TextLine, got {line_element.tag!r}")
    for old in line_element.findall(f"{{{namespace}}}TextEquiv"):
        line_element.remove(old)
    equiv = etree.Element(f"{{{namespace}}}TextEquiv", nsmap=None)
    if confidence is not None:
        equiv.set("conf", f"{min(max(confidence, 0.0), 1.0):.4f}")
    etree.SubElement(equiv, f"{{{namespace}}}Unicode").text = text
    position = 0
    for index, child in enumerate(line_element):
        if isinstance(child.tag, str) and etree.QName(child).localname in _BEFORE_TEXT_EQUIV:
            position = index + 1
    # keep the file's indentation: the new element takes over the whitespace after the previous one
    if position and line_element[position - 1].tail is not None:
        equiv.tail = line_element[position - 1].tail
    line_element.insert(position, equiv)


def _refresh_region_text(layout: PageLayout) -> None:
    """A TextRegion that has its own TextEquiv gets its lines' texts, one per line, so the region-level
    text that viewers show never contradicts the lines (regions without one are left without)."""
    namespace = etree.QName(layout.tree.getroot()).namespace
    for region in layout.tree.getroot().iter(f"{{{namespace}}}TextRegion"):
        equivs = region.findall(f"{{{namespace}}}TextEquiv")
        lines = region.findall(f"{{{namespace}}}TextLine")
        if not equivs or not lines:
            continue
        texts = [line.findtext(f"{{{namespace}}}TextEquiv/{{{namespace}}}Unicode") or "" for line in lines]
        for extra in equivs[1:]:
            region.remove(extra)
        equiv = equivs[0]
        equiv.attrib.pop("conf", None)
        unicode = equiv.find(f"{{{namespace}}}Unicode")
        if unicode is None:
            unicode = etree.SubElement(equiv, f"{{{namespace}}}Unicode")
        unicode.text = "\n".join(texts)


def _touch_last_change(layout: PageLayout) -> None:
    namespace = etree.QName(layout.tree.getroot()).namespace
    last_change = layout.tree.getroot().find(f"{{{namespace}}}Metadata/{{{namespace}}}LastChange")
    if last_change is not None:
        last_change.text = datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None).isoformat()


def transcribe_page(recognizer, xml_path: str | Path) -> PageTranscription:
    """Recognise every line of a PAGE file with ``recognizer`` (a ``LineRecognizer``); the texts are set
    in ``result.layout.tree``. Raises ``LayoutError`` for a file that is not PAGE or has no image."""
    layout = read_layout(xml_path)
    if layout.format != "page":
        kind = f"{layout.format.upper()} {layout.version}"
        raise LayoutError(f"{layout.path}: --page-xml writes PAGE files; this is {kind}")
    image_path = layout.find_image()
    if image_path is None:
        names = ", ".join(str(p) for p in layout.image_candidates()) or "none named"
        raise LayoutError(f"{layout.path}: page image missing (looked for {names})")
    try:
        page = page_gray(open_image(image_path))
    except ValueError as error:
        raise LayoutError(f"{layout.path}: page image unreadable: {error}") from error
    result = PageTranscription(layout)
    cuts, lines = [], []
    for line in layout.lines:
        reason = line.polygon_error or polygon_problem(line.polygon, (page.shape[1], page.shape[0]))
        if reason is None:
            try:
                cuts.append(cut_line(page, line.polygon, line.baseline))  # type: ignore[arg-type]
                lines.append(line)
                continue
            except ValueError as error:
                reason = str(error)
        result.problems.append((line.id, f"bad polygon: {reason}"))
    for line, decoded in zip(lines, recognizer.predict_lines(cuts, together=True) if cuts else []):
        set_line_text(line.element, decoded.text, decoded.confidence)
        if getattr(decoded, "language", None) in LANGUAGES:  # PAGE names languages: French, not fr
            line.element.set("primaryLanguage", LANGUAGES[decoded.language][0])
        result.texts[line.id] = decoded
    _refresh_region_text(layout)
    _touch_last_change(layout)
    return result


def write_page(layout: PageLayout, target: str | Path) -> Path:
    """Write the (edited) PAGE tree as UTF-8 with an XML declaration; the folder is created if needed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    layout.tree.write(str(target), encoding="UTF-8", xml_declaration=True, pretty_print=False)
    return target
