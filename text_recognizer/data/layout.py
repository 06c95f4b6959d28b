"""Read page layouts from PAGE-XML (2013/2019 schemas, and the 2017/2018 ones that share their shape)
and ALTO (v2-v4): the text lines of a page with their polygon, baseline and transcription.

Why: kraken, eScriptorium, Transkribus and OCR-D keep segmented and transcribed pages in these two
formats. One reader serves training (cutting labelled lines out, ``text_recognizer.data.page``) and
transcription (writing recognised text back, ``text_recognizer.page_output``), so both agree on
what a line is. XML is parsed with lxml, with entity resolution and network access off.

Coordinates are pixels of the page image, ``(x, y)`` with y down. A line whose geometry cannot be
read keeps ``polygon=None`` and says why in ``polygon_error``; the caller decides what to do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

PAGE_NAMESPACE_PREFIX = "http://schema.primaresearch.org/PAGE/gts/pagecontent/"
PAGE_VERSIONS = ("2013-07-15", "2017-07-15", "2018-07-15", "2019-07-15")
ALTO_NAMESPACES = {f"http://www.loc.gov/standards/alto/ns-v{v}#": v for v in (2, 3, 4)}

Point = tuple[float, float]


class LayoutError(ValueError):
    """A file is not a PAGE or ALTO document we can read (malformed XML, unknown namespace, units)."""


@dataclass(eq=False)
class LayoutLine:
    """One text line: an id unique in its file, its text (``None`` when the file has none) and geometry."""

    id: str
    text: str | None
    polygon: list[Point] | None
    baseline: list[Point] | None = None
    polygon_error: str | None = None
    element: etree._Element | None = field(default=None, repr=False)  # the TextLine, for writing back


@dataclass(eq=False)
class PageLayout:
    """A parsed layout file: its format, the page image it names, the page size it states, its lines."""

    path: Path
    format: str  # "page" or "alto"
    version: str
    image_name: str | None
    image_size: tuple[int, int] | None
    lines: list[LayoutLine]
    tree: etree._ElementTree = field(repr=False)

    def image_candidates(self) -> list[Path]:
        """Where the page image may be: the named file next to the XML (also by its bare file name, for
        exports that kept absolute or foreign paths), then any image with the XML file's stem."""
        folder = self.path.parent
        candidates: list[Path] = []
        if self.image_name:
            named = Path(self.image_name.replace("\\", "/"))
            candidates += [named if named.is_absolute() else folder / named, folder / named.name]
        candidates += sorted(p for p in folder.glob(f"{glob_escape(self.path.stem)}.*") if p.suffix.lower() != ".xml")
        return candidates

    def find_image(self) -> Path | None:
        return next((p for p in self.image_candidates() if p.is_file()), None)


def glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)


_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=False, huge_tree=False)


def read_layout(path: str | Path) -> PageLayout:
    """Parse a PAGE or ALTO file; raise :class:`LayoutError` naming the file and the problem."""
    path = Path(path)
    try:
        tree = etree.parse(str(path), _PARSER)
    except OSError as error:
        raise LayoutError(f"{path}: cannot read the file ({error})") from error
    except etree.XMLSyntaxError as error:
        raise LayoutError(f"{path}: not well-formed XML ({error})") from error
    root = tree.getroot()
    namespace = etree.QName(root).namespace or ""
    if namespace.startswith(PAGE_NAMESPACE_PREFIX) and etree.QName(root).localname == "PcGts":
        version = namespace[len(PAGE_NAMESPACE_PREFIX):]
        if version not in PAGE_VERSIONS:
            raise LayoutError(f"{path}: PAGE schema version {version!r} is not supported (use one of {PAGE_VERSIONS})")
        return _read_page(path, tree, namespace, version)
    if namespace in ALTO_NAMESPACES and etree.QName(root).localname == "alto":
        return _read_alto(path, tree, namespace, ALTO_NAMESPACES[namespace])
    raise LayoutError(
        f"{path}: root element {root.tag!r} is neither PAGE-XML ({{{PAGE_NAMESPACE_PREFIX}<version>}}PcGts) "
        f"nor ALTO v2-v4 ({{http://www.loc.gov/standards/alto/ns-vN#}}alto)"
    )


def parse_points(text: str | None) -> list[Point]:
    """``"x1,y1 x2,y2 ..."`` (PAGE, ALTO v4) or ``"x1 y1 x2 y2 ..."`` (older ALTO) -> points.

    Raises ``ValueError`` for an odd number of coordinates or ones that are not finite numbers."""
    if text is None or not text.strip():
        return []
    parts = text.replace(",", " ").split()
    try:
        numbers = [float(p) for p in parts]
    except ValueError as error:
        raise ValueError(f"coordinates {text!r} are not numbers ({error})") from None
    if len(numbers) % 2:
        raise ValueError(f"coordinates {text!r} have an odd count ({len(numbers)}), not x,y pairs")
    if not all(math.isfinite(n) for n in numbers):
        raise ValueError(f"coordinates {text!r} are not finite")
    return list(zip(numbers[0::2], numbers[1::2]))


def _int_attribute(element, name: str) -> int | None:
    value = element.get(name) if element is not None else None
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


# --- PAGE ------------------------------------------------------------------------------------------------------


def _page_text(line, ns: str) -> str | None:
    """The line's own TextEquiv (lowest ``index`` first); else its Words' texts joined by spaces."""
    equivs = line.findall(f"{{{ns}}}TextEquiv")
    if equivs:
        def rank(item):
            position, equiv = item
            index = equiv.get("index")
            return (int(index) if index is not None and index.lstrip("-").isdigit() else 0, position)

        best = min(enumerate(equivs), key=rank)[1]
        unicode = best.find(f"{{{ns}}}Unicode")
        return unicode.text or "" if unicode is not None else None
    words = [_page_text(word, ns) for word in line.findall(f"{{{ns}}}Word")]
    words = [w for w in words if w]
    return " ".join(words) if words else None


def _page_points(element, ns: str) -> list[Point]:
    points = element.get("points")
    if points is None:  # PAGE 2010 style: <Point x= y=/> children
        children = element.findall(f"{{{ns}}}Point")
        return [(float(p.get("x")), float(p.get("y"))) for p in children] if children else []
    return parse_points(points)


def _read_page(path: Path, tree, ns: str, version: str) -> PageLayout:
    page = tree.getroot().find(f"{{{ns}}}Page")
    if page is None:
        raise LayoutError(f"{path}: PAGE file has no Page element")
    size = (_int_attribute(page, "imageWidth"), _int_attribute(page, "imageHeight"))
    lines = []
    for number, element in enumerate(page.iter(f"{{{ns}}}TextLine")):
        line = LayoutLine(id=element.get("id") or f"line_{number}", text=_page_text(element, ns), polygon=None,
                          element=element)
        coords = element.find(f"{{{ns}}}Coords")
        try:
            line.polygon = _page_points(coords, ns) if coords is not None else None
            if line.polygon is None:
                line.polygon_error = "TextLine has no Coords"
        except (ValueError, TypeError) as error:
            line.polygon_error = f"bad Coords: {error}"
        baseline = element.find(f"{{{ns}}}Baseline")
        if baseline is not None:
            try:
                line.baseline = _page_points(baseline, ns) or None
            except (ValueError, TypeError):
                line.baseline = None  # a broken baseline only costs the deskewing
        lines.append(line)
    image_size = size if None not in size else None
    return PageLayout(path, "page", version, page.get("imageFilename"), image_size, lines, tree)


# --- ALTO ------------------------------------------------------------------------------------------------------


def _alto_text(line, ns: str) -> str | None:
    """String CONTENTs joined by single spaces, a line-end HYP's CONTENT appended; None without String."""
    words, hyphen = [], ""
    for child in line:
        tag = etree.QName(child).localname if isinstance(child.tag, str) else ""
        if tag == "String":
            words.append(child.get("CONTENT") or "")
        elif tag == "HYP":
            hyphen = child.get("CONTENT") or ""
    if not words and not hyphen:
        return None
    return " ".join(w for w in words if w) + hyphen


def _alto_geometry(line, ns: str) -> tuple[list[Point] | None, str | None]:
    polygon = line.find(f"{{{ns}}}Shape/{{{ns}}}Polygon")
    if polygon is not None:
        try:
            return parse_points(polygon.get("POINTS")), None
        except ValueError as error:
            return None, f"bad Shape/Polygon: {error}"
    box = [line.get(k) for k in ("HPOS", "VPOS", "WIDTH", "HEIGHT")]
    if None in box:
        return None, "TextLine has neither Shape/Polygon nor HPOS/VPOS/WIDTH/HEIGHT"
    try:
        x, y, w, h = (float(v) for v in box)  # type: ignore[arg-type]
    except ValueError:
        return None, f"HPOS/VPOS/WIDTH/HEIGHT {box} are not numbers"
    return [(x, y), (x + w, y), (x + w, y + h), (x, y + h)], None


def _alto_baseline(line) -> list[Point] | None:
    value = line.get("BASELINE")
    if value is None:
        return None
    try:
        points = parse_points(value)
    except ValueError:
        return None
    if len(points) >= 2:
        return points
    return None  # v2/v3: a single y coordinate, i.e. a horizontal baseline: nothing to deskew


def _read_alto(path: Path, tree, ns: str, version: int) -> PageLayout:
    root = tree.getroot()
    unit = root.findtext(f"{{{ns}}}Description/{{{ns}}}MeasurementUnit")
    if unit is not None and unit.strip() != "pixel":
        raise LayoutError(f"{path}: ALTO MeasurementUnit {unit.strip()!r} is not supported; only 'pixel' is")
    file_name = root.findtext(f"{{{ns}}}Description/{{{ns}}}sourceImageInformation/{{{ns}}}fileName")
    page = root.find(f"{{{ns}}}Layout/{{{ns}}}Page")
    size = (_int_attribute(page, "WIDTH"), _int_attribute(page, "HEIGHT"))
    lines = []
    for number, element in enumerate(root.iter(f"{{{ns}}}TextLine")):
        polygon, error = _alto_geometry(element, ns)
        lines.append(LayoutLine(id=element.get("ID") or f"line_{number}", text=_alto_text(element, ns),
                                polygon=polygon, baseline=_alto_baseline(element), polygon_error=error,
                                element=element))
    file_name = file_name.strip() if file_name else None
    image_size = size if None not in size else None
    return PageLayout(path, "alto", f"v{version}", file_name or None, image_size, lines, tree)  # type: ignore[arg-type]
