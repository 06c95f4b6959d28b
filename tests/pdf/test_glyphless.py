"""The text layer's font: every character the bundled models can write has a glyph of its own (so it survives a
copy out of the PDF), and the font is small."""

from __future__ import annotations

import io

import pytest

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.pdf.glyphless import ADVANCE, covered, glyphless_font
from text_recognizer.recognizer import DEFAULT_CHECKPOINT


def test_every_character_of_the_bundled_alphabet_is_covered():
    codec = load_checkpoint(DEFAULT_CHECKPOINT).codec
    missing = [character for character in codec.charset if not covered(character)]
    assert missing == []


def test_one_glyph_per_character_all_the_same_width():
    ttLib = pytest.importorskip("fontTools.ttLib")
    font = ttLib.TTFont(io.BytesIO(glyphless_font()))
    cmap = font.getBestCmap()
    assert cmap[ord("é")] != cmap[ord("e")] and cmap[ord("ſ")] != cmap[ord("s")]
    assert len(set(cmap.values())) == len(cmap)
    assert {font["hmtx"][name][0] for name in cmap.values()} == {ADVANCE}
    assert len(glyphless_font()) < 64_000
