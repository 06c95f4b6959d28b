"""Builds real page images with handwriting-like lines and the PAGE-XML / ALTO files that describe them.

Shared by the layout, cutting, page-dataset and PAGE-output tests. Lines are rendered by the
synthetic generator and placed on a white page, optionally rotated, so each line's polygon and
baseline are known exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
from PIL import Image, ImageChops

from text_recognizer.data.synthetic import render_line

PAGE_2013 = "http://schema.primaresearch.org/PAGE/gts/pagecontent/2013-07-15"
PAGE_2019 = "http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"
ALTO_NS = {2: "http://www.loc.gov/standards/alto/ns-v2#", 3: "http://www.loc.gov/standards/alto/ns-v3#",
           4: "http://www.loc.gov/standards/alto/ns-v4#"}
TEXTS = ("hello world", "seven cats", "move the tables")


@dataclass
class DrawnLine:
    text: str
    polygon: list[tuple[float, float]]
    baseline: list[tuple[float, float]]


def draw_page(texts=TEXTS, angles=(0.0, 0.0, 4.0), size=(1000, 420), seed=0) -> tuple[Image.Image, list[DrawnLine]]:
    """A white greyscale page with one rendered line per text, rotated by ``angles`` (degrees,
    positive: the line falls to the right), and each line's exact polygon and baseline."""
    rng = np.random.default_rng(seed)
    page = Image.new("L", size, 255)
    drawn = []
    for number, (text, angle) in enumerate(zip(texts, angles)):
        line = render_line(text, rng, height=64)
        tx, ty = 40.0, 30.0 + 130.0 * number
        c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))

        def forward(qx, qy, c=c, s=s, tx=tx, ty=ty):
            return (round(c * qx - s * qy + tx, 1), round(s * qx + c * qy + ty, 1))

        # Image.transform maps each output (page) pixel to the input (line) pixel it samples.
        canvas = line.transform(size, Image.Transform.AFFINE, (c, s, -c * tx - s * ty, -s, c, s * tx - c * ty),
                                resample=Image.Resampling.BICUBIC, fillcolor=255)
        page = ImageChops.darker(page, canvas)
        w, h = line.size
        drawn.append(DrawnLine(text, [forward(0, 0), forward(w, 0), forward(w, h), forward(0, h)],
                               [forward(0, 0.75 * h), forward(w, 0.75 * h)]))
    return page, drawn


def points(polygon) -> str:
    return " ".join(f"{x:g},{y:g}" for x, y in polygon)


def page_xml(image_name: str, size, lines: list[dict], namespace: str = PAGE_2019) -> str:
    """A PAGE document; each line dict has ``id`` and optionally ``text`` (None: no TextEquiv),
    ``points`` (a string, None: no Coords), ``baseline`` (a string)."""
    body = []
    for line in lines:
        parts = [f'<TextLine id={quoteattr(line["id"])}>']
        if line.get("points") is not None:
            parts.append(f"<Coords points={quoteattr(line['points'])}/>")
        if line.get("baseline"):
            parts.append(f"<Baseline points={quoteattr(line['baseline'])}/>")
        if line.get("text") is not None:
            text = line["text"].replace("&", "&amp;").replace("<", "&lt;")
            parts.append(f"<TextEquiv><Unicode>{text}</Unicode></TextEquiv>")
        parts.append("</TextLine>")
        body.append("".join(parts))
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<PcGts xmlns="{namespace}">'
            f"<Metadata><Creator>test</Creator><Created>2026-11-30T00:00:00</Created>"
            f"<LastChange>2026-11-30T00:00:00</LastChange></Metadata>"
            f'<Page imageFilename={quoteattr(image_name)} imageWidth="{size[0]}" imageHeight="{size[1]}">'
            f'<TextRegion id="r1"><Coords points="0,0 {size[0]},0 {size[0]},{size[1]} 0,{size[1]}"/>'
            + "".join(body) + "</TextRegion></Page></PcGts>\n")


def alto_xml(image_name: str, size, lines: list[dict], version: int = 4) -> str:
    """An ALTO document; each line dict has ``id``, ``text`` and ``polygon`` (points list) or ``box``."""
    body = []
    for line in lines:
        if "polygon" in line:
            xs, ys = [p[0] for p in line["polygon"]], [p[1] for p in line["polygon"]]
            box = (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
        else:
            box = line["box"]
        attributes = f'ID="{line["id"]}" HPOS="{box[0]:g}" VPOS="{box[1]:g}" WIDTH="{box[2]:g}" HEIGHT="{box[3]:g}"'
        if line.get("baseline"):
            attributes += f' BASELINE="{line["baseline"]}"'
        shape = ""
        if "polygon" in line:
            pts = points(line["polygon"]) if version == 4 else " ".join(f"{x:g} {y:g}" for x, y in line["polygon"])
            shape = f'<Shape><Polygon POINTS="{pts}"/></Shape>'
        words = line["text"].split(" ") if line.get("text") else []
        strings = '<SP WIDTH="10"/>'.join(f"<String CONTENT={quoteattr(w)}/>" for w in words)
        body.append(f"<TextLine {attributes}>{shape}{strings}</TextLine>")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<alto xmlns="{ALTO_NS[version]}">'
            f"<Description><MeasurementUnit>pixel</MeasurementUnit><sourceImageInformation>"
            f"<fileName>{image_name}</fileName></sourceImageInformation></Description>"
            f'<Layout><Page ID="p1" WIDTH="{size[0]}" HEIGHT="{size[1]}" PHYSICAL_IMG_NR="1"><PrintSpace>'
            f'<TextBlock ID="b1">' + "".join(body) + "</TextBlock></PrintSpace></Page></Layout></alto>\n")


def write_page_folder(folder: Path, fmt: str = "page", namespace: str = PAGE_2019, version: int = 4,
                      stem: str = "page1", extra_lines: list[dict] | None = None) -> list[DrawnLine]:
    """A page image ``<stem>.png`` and its ``<stem>.xml`` with the three drawn lines (+ ``extra_lines``)."""
    folder.mkdir(parents=True, exist_ok=True)
    page, drawn = draw_page()
    page.save(folder / f"{stem}.png")
    if fmt == "page":
        lines = [{"id": f"l{i}", "text": d.text, "points": points(d.polygon), "baseline": points(d.baseline)}
                 for i, d in enumerate(drawn)]
        xml = page_xml(f"{stem}.png", page.size, lines + (extra_lines or []), namespace)
    else:
        lines = [{"id": f"l{i}", "text": d.text, "polygon": d.polygon,
                  **({"baseline": points(d.baseline)} if version == 4 else {})} for i, d in enumerate(drawn)]
        xml = alto_xml(f"{stem}.png", page.size, lines + (extra_lines or []), version)
    (folder / f"{stem}.xml").write_text(xml, encoding="utf-8")
    return drawn
