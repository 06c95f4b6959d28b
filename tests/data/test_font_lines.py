"""Lines drawn with fonts from a folder: deterministic, the right size and polarity, labels that match."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import ImageFont

from text_recognizer.codec import DEFAULT_CHARSET
from text_recognizer.data.font_lines import FontLines, find_fonts


def pillow_font(folder: Path, name: str = "aileron.ttf") -> Path:
    """Pillow's own embedded TrueType font written to a file: a real font every machine has."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(ImageFont.load_default(size=20).path.getvalue())  # type: ignore[union-attr]
    return path


@pytest.fixture
def font_dir(tmp_path: Path) -> Path:
    pillow_font(tmp_path / "fonts")
    (tmp_path / "fonts" / "notes.txt").write_text("not a font, ignored")
    return tmp_path / "fonts"


def test_lines_are_deterministic_per_seed_and_index(font_dir):
    a, b, other = FontLines(font_dir, 6, seed=3), FontLines(font_dir, 6, seed=3), FontLines(font_dir, 6, seed=4)
    for i in range(6):
        (ia, ta), (ib, tb) = a[i], b[i]
        assert ta == tb and ia.tobytes() == ib.tobytes()
    assert [a[i][1] for i in range(6)] != [other[i][1] for i in range(6)]
    assert a[-1][1] == a[5][1]
    with pytest.raises(IndexError):
        a[6]


@pytest.mark.parametrize("height", [32, 40, 64])
def test_dark_ink_on_white_at_the_model_height(font_dir, height):
    lines = FontLines(font_dir, 5, seed=0, height=height)
    for i in range(len(lines)):
        image, text = lines[i]
        pixels = np.asarray(image)
        assert image.mode == "L" and image.height == height
        assert text and set(text) <= set(DEFAULT_CHARSET)
        assert np.median(pixels) > 240  # mostly paper
        assert pixels.min() < 60  # with solid ink
        # ink reaches the top and bottom rows' neighbourhood: the line is cropped to its ink
        ink_rows = np.flatnonzero((pixels < 128).any(axis=1))
        assert ink_rows[0] <= 0.1 * height and ink_rows[-1] >= 0.9 * height - 1
        # wide enough for CTC: at least 0.2 px of width per px of height for each character
        assert image.width >= 0.2 * height * len(text)


def test_layout_estimates_widths_and_label_lengths_without_drawing(font_dir):
    lines = FontLines(font_dir, 12, seed=1, height=40)
    aspects, lengths = lines.aspects(), lines.label_lengths()
    drawn = [lines[i] for i in range(12)]
    assert lengths == [len(text) for _, text in drawn]
    ratios = [image.width / image.height / aspect for (image, _), aspect in zip(drawn, aspects)]
    assert all(0.6 < r < 1.7 for r in ratios), ratios


def test_characters_a_font_lacks_are_dropped_from_the_label(tmp_path):
    subset = pytest.importorskip("fontTools.subset")  # fontTools comes with matplotlib
    full = pillow_font(tmp_path / "full")
    kept = "aeinost ."
    (tmp_path / "fonts").mkdir()
    options = subset.Options()
    options.notdef_outline = True  # the missing-glyph box stays, as in real fonts
    font = subset.load_font(str(full), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=kept)
    subsetter.subset(font)
    subset.save_font(font, str(tmp_path / "fonts" / "partial.ttf"), options)
    lines = FontLines(tmp_path / "fonts", 10, seed=0)
    texts = [lines[i][1] for i in range(10)]
    assert all(text and set(text) <= set(kept) for text in texts), texts
    assert "  " not in "".join(texts)


def test_bad_font_folders_fail_early_with_a_clear_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_fonts(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no font files"):
        FontLines(tmp_path / "empty", 4)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "broken.ttf").write_bytes(b"this is not a font")
    with pytest.raises(ValueError, match="cannot read font .*broken.ttf"):
        FontLines(tmp_path / "bad", 4)
    with pytest.raises(ValueError, match="num_lines"):
        FontLines(pillow_font(tmp_path / "ok").parent, -1)


def test_lines_can_draw_given_text(font_dir):
    texts = ["the quick brown fox", "jumps over the lazy dog and keeps running far beyond the end of this line"]
    lines = FontLines(font_dir, 20, seed=2, texts=texts, max_chars=40)
    drawn = [lines[i][1] for i in range(20)]
    assert set(drawn) == {"the quick brown fox", "jumps over the lazy dog and keeps"}  # cut at a space <= 40
    assert lines.label_lengths() == [len(t) for t in drawn]
    again = FontLines(font_dir, 20, seed=2, texts=texts, max_chars=40)
    assert [again[i][1] for i in range(20)] == drawn
    # characters outside the model's alphabet leave the label (the ink never shows them either)
    odd = FontLines(font_dir, 3, seed=0, texts=["caf\u00e9 \u03b1\u03b2 ok"])
    assert {odd[i][1] for i in range(3)} == {"caf ok"}
    with pytest.raises(ValueError, match="texts is empty"):
        FontLines(font_dir, 3, texts=["  ", ""])


DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


@pytest.mark.skipif(not DEJAVU.is_file(), reason="DejaVu Sans (a font with accented letters) not installed")
def test_given_text_in_another_alphabet_keeps_its_letters(tmp_path):
    (tmp_path / "fonts").mkdir()
    (tmp_path / "fonts" / DEJAVU.name).write_bytes(DEJAVU.read_bytes())
    lines = FontLines(tmp_path / "fonts", 4, seed=0, charset=" BGbdeorßäöü", texts=["Grüße über öde Bär"])
    assert {lines[i][1] for i in range(4)} == {"Grüße über öde Bär"}
