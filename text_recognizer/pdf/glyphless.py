"""The font of text layers: every character we can read has a glyph of its own, and every glyph is the same box.

Why: a searchable PDF's text is drawn in render mode 3 (invisible), so the glyphs' shapes never show; but a viewer
extracts text through the font's character map, so each character needs a glyph *of its own* (a font that maps
everything to one glyph makes every letter come back as the same one). Embedding a real font would add hundreds of
KiB to every PDF; this one is about 45 KiB with nothing in it but a character map and one glyph shape, a box half
an em wide from 0.2 em below the baseline to 0.8 em above it. The box is never drawn; it gives each character an
extent, which viewers use to select text and to tell one line from the next, and which
:mod:`text_recognizer.pdf.text_layer` uses to stretch each word onto its measured position. Built in memory with
fontTools on first use (about 0.1 s), so no binary is kept in the repository.
"""

from __future__ import annotations

import io
from functools import lru_cache

#: Units per em, advance of every glyph and the vertical metrics, in font units.
UNITS_PER_EM = 1000
ADVANCE = 500
ASCENT = 800
DESCENT = -200

#: The code points that get a glyph: Basic Latin to Latin Extended-B, combining marks, Greek, Latin Extended
#: Additional, punctuation, currency, letterlike symbols and number forms, and the Latin ligatures (ﬀ-ﬆ). Every
#: character of the bundled models' alphabets is among them (a test checks).
CODE_POINT_RANGES = ((0x20, 0x7E), (0xA0, 0x24F), (0x250, 0x2FF), (0x300, 0x36F), (0x370, 0x3FF),
                     (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x20A0, 0x20CF), (0x2100, 0x218F), (0xFB00, 0xFB06))


def covered(character: str) -> bool:
    """Whether ``character`` has a glyph (and so survives a copy from the text layer)."""
    point = ord(character)
    return any(low <= point <= high for low, high in CODE_POINT_RANGES)


@lru_cache(maxsize=1)
def glyphless_font() -> bytes:
    """The font file (TrueType, ``glyf`` outlines all empty) as bytes."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    points = [point for low, high in CODE_POINT_RANGES for point in range(low, high + 1)]
    names = [".notdef", *(f"uni{point:04X}" for point in points)]
    builder = FontBuilder(UNITS_PER_EM, isTTF=True)
    builder.setupGlyphOrder(names)
    builder.setupCharacterMap({point: f"uni{point:04X}" for point in points})
    pen = TTGlyphPen(None)  # one em-sized box: never drawn (render mode 3), but it gives each character a box
    pen.moveTo((0, DESCENT))
    pen.lineTo((0, ASCENT))
    pen.lineTo((ADVANCE, ASCENT))
    pen.lineTo((ADVANCE, DESCENT))
    pen.closePath()
    box = pen.glyph()
    builder.setupGlyf({name: box for name in names})
    builder.setupHorizontalMetrics({name: (ADVANCE, 0) for name in names})
    builder.setupHorizontalHeader(ascent=ASCENT, descent=DESCENT)
    builder.setupNameTable({"familyName": "TextRecognizerGlyphless", "styleName": "Regular"})
    builder.setupOS2(sTypoAscender=ASCENT, sTypoDescender=DESCENT, usWinAscent=ASCENT, usWinDescent=-DESCENT)
    builder.setupPost(keepGlyphNames=False)  # no names: a smaller font, and the cmap is what viewers read
    buffer = io.BytesIO()
    builder.save(buffer)
    return buffer.getvalue()
