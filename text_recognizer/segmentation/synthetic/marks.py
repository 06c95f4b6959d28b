"""Marks on the paper that are not text lines: stamps, printed logos and barcodes, printed letterheads, and
punch holes.

Why a module of its own: a segmenter must learn to leave these alone, and each is a small shape drawn
once at its own size (a stamp's box, a letterhead's band, a hole's disc) for the paper (``paper.finish``) to
paste.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from text_recognizer.segmentation.synthetic.style import Style


def stamp(style: Style, rng: np.random.Generator) -> tuple[tuple[int, int, int, int], Image.Image, np.ndarray]:
    """A stamp or printed mark that is not a text line: its box, coverage and RGB colour."""
    size = min(int(style.width * rng.uniform(0.1, 0.22)), style.height, style.width)
    mask = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask)
    stroke = max(2, size // 40)
    if style.stamp == "ring":
        draw.ellipse((stroke, stroke, size - stroke, size - stroke), outline=255, width=stroke)
        inner = size // 5
        draw.ellipse((inner, inner, size - inner, size - inner), outline=255, width=max(1, stroke // 2))
        dot = size / 30
        for angle in np.linspace(0, 2 * np.pi, int(rng.integers(8, 16)), endpoint=False):  # letters round it
            cx, cy = size / 2 + size * 0.4 * math.cos(angle), size / 2 + size * 0.4 * math.sin(angle)
            draw.ellipse((cx - dot, cy - dot, cx + dot, cy + dot), fill=255)
    elif style.stamp == "box":
        draw.rectangle((stroke, size // 4, size - stroke, 3 * size // 4), outline=255, width=stroke)
        draw.rectangle((size // 6, size // 3, 5 * size // 6, 2 * size // 3), fill=255)
    elif style.stamp == "logo":
        draw.ellipse((0, 0, size // 2, size // 2), fill=255)
        draw.polygon([(size // 3, size), (size, size // 3), (size, size)], fill=255)
    else:  # barcode
        x = 0
        while x < size:
            bar = int(rng.integers(1, 6)) * stroke // 2 + 1
            if rng.random() < 0.5:
                draw.rectangle((x, size // 3, x + bar, 2 * size // 3), fill=255)
            x += bar + 1
    mask = mask.rotate(rng.uniform(-30, 30), resample=Image.Resampling.BILINEAR)
    cover = np.asarray(mask, dtype=np.float32) / 255
    if style.stamp in ("ring", "box"):  # stamp ink is patchy
        cover = cover * np.clip(0.8 + 0.4 * rng.standard_normal(cover.shape, dtype=np.float32), 0, 1)
    cover = Image.fromarray(np.rint(cover * rng.uniform(0.4, 0.9) * 255).astype(np.uint8))
    x0, y0 = int(rng.integers(0, style.width - size + 1)), int(rng.integers(0, style.height - size + 1))
    colours = {"ring": [(0.8, 0.15, 0.2), (0.25, 0.3, 0.75), (0.45, 0.2, 0.55)], "box": [(0.25, 0.3, 0.75)],
               "logo": [(0.1, 0.1, 0.1), (0.2, 0.35, 0.6)], "barcode": [(0.05, 0.05, 0.05)]}[style.stamp]
    colour = np.array(colours[int(rng.integers(len(colours)))])
    return (x0, y0, x0 + size, y0 + size), cover, colour


#: Letters of the made-up words a letterhead prints (no language's text is needed: only its look).
CONSONANTS, VOWELS = "bcdfghklmnprstvwz", "aeiouy"
#: Ink colours of printed letterheads: black, dark blue, dark red, dark green.
LETTERHEAD_INKS = [(0.08, 0.08, 0.1), (0.12, 0.16, 0.4), (0.45, 0.1, 0.12), (0.1, 0.3, 0.2)]


def made_up_words(rng: np.random.Generator, count: int) -> str:
    """``count`` pronounceable made-up words, capitalised: a letterhead's look without anyone's text."""
    words = []
    for _ in range(count):
        syllables = int(rng.integers(1, 4))
        word = "".join(str(rng.choice(list(CONSONANTS))) + str(rng.choice(list(VOWELS))) for _ in range(syllables))
        words.append(word.capitalize())
    return " ".join(words)


def printed_text(text: str, size: int, rng: np.random.Generator) -> Image.Image:
    """``text`` printed in Pillow's bundled typeface at ``size`` px, as an ``"L"`` coverage mask (255: ink), in one
    of the faces a letterhead uses: regular or bold, condensed or wide, upright or slanted.

    Why Pillow's face and no font files: the page composer must run the same everywhere (no fonts are
    installed with the package); the variants give the segmenter more than one face to leave alone."""
    font = ImageFont.load_default(size=max(6, size))
    bold = int(rng.integers(0, 2)) * max(1, size // 18)
    left, top, right, bottom = font.getbbox(text, stroke_width=bold)
    mask = Image.new("L", (max(1, right - left) + 2, max(1, bottom - top) + 2), 0)
    ImageDraw.Draw(mask).text((1 - left, 1 - top), text, fill=255, font=font, stroke_width=bold, stroke_fill=255)
    stretch = rng.uniform(0.75, 1.35)
    mask = mask.resize((max(1, round(mask.width * stretch)), mask.height), Image.Resampling.BILINEAR)
    if rng.random() < 0.25:  # slanted, as italics
        shear = rng.uniform(0.15, 0.3)
        grown = mask.width + int(shear * mask.height) + 1
        mask = mask.transform((grown, mask.height), Image.Transform.AFFINE,
                              (1, shear, -shear * mask.height, 0, 1, 0), resample=Image.Resampling.BILINEAR)
    return mask


def letterhead(style: Style, rng: np.random.Generator) -> tuple[tuple[int, int, int, int], Image.Image, np.ndarray]:
    """A printed letterhead in the band above the first written line: a centred title and subtitle, and lists
    of small capitals in the top corners (officers, directors, an address), turned with the page. Its box
    (the band), coverage and RGB colour; ``style.top`` leaves the band free of writing."""
    band = max(8, int(style.top - 0.3 * style.text_height))
    mask = Image.new("L", (style.width, band), 0)
    title = style.text_height * rng.uniform(0.35, 0.8)
    y = band * rng.uniform(0.05, 0.2)
    for row in range(int(rng.integers(1, 4))):  # the title, then smaller lines under it
        size = title * (1.0 if row == 0 else rng.uniform(0.4, 0.7))
        text = made_up_words(rng, int(rng.integers(1, 5)))
        piece = printed_text(text.upper() if rng.random() < 0.4 else text, round(size), rng)
        if piece.width > 0.7 * style.width:
            piece = piece.resize((int(0.7 * style.width), piece.height), Image.Resampling.BILINEAR)
        if y + piece.height > band:
            break
        mask.paste(255, (int((style.width - piece.width) / 2), int(y)), piece)
        y += piece.height * rng.uniform(1.2, 1.8)
    corners = [side for side in ("left", "right") if rng.random() < 0.5]
    small = style.text_height * rng.uniform(0.15, 0.3)
    for side in corners:  # lists of names and addresses in small capitals
        y = band * rng.uniform(0.02, 0.15)
        for _ in range(int(rng.integers(2, 12))):
            piece = printed_text(made_up_words(rng, int(rng.integers(1, 4))).upper(), round(small), rng)
            if y + piece.height > band or piece.width > 0.25 * style.width:
                break
            x = style.width * rng.uniform(0.03, 0.06)
            mask.paste(255, (int(x if side == "left" else style.width - x - piece.width), int(y)), piece)
            y += piece.height * rng.uniform(1.2, 1.6)
    mask = mask.rotate(-style.angle, resample=Image.Resampling.BILINEAR)  # with the page (y down)
    cover = Image.fromarray(np.rint(np.asarray(mask, np.float32) * rng.uniform(0.6, 0.95)).astype(np.uint8))
    colour = np.array(LETTERHEAD_INKS[int(rng.integers(len(LETTERHEAD_INKS)))])
    return (0, 0, style.width, band), cover, colour


def holes(style: Style, rng: np.random.Generator) -> list[tuple[int, tuple[int, int], Image.Image]]:
    """Punch holes near the left (or right) edge, dark or light: (grey value, top-left corner, disc mask)."""
    W, H = style.width, style.height
    radius = W * rng.uniform(0.01, 0.015)
    cx = W * rng.uniform(0.025, 0.04)
    cx = W - cx if style.holes_right else cx
    gap = W * (0.38 if style.holes == 2 else 0.2)
    value = int(rng.uniform(10, 60) if style.holes_dark else rng.uniform(235, 255))
    r = int(radius) + 2
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    disc = Image.fromarray(np.rint(np.clip(radius + 0.5 - np.hypot(yy, xx), 0, 1) * 255).astype(np.uint8))
    holes = []
    for k in range(style.holes):
        cy = H / 2 + (k - (style.holes - 1) / 2) * gap
        corner = (int(cx) - r, int(cy) - r)
        if 0 <= corner[0] <= W - 2 * r - 1 and 0 <= corner[1] <= H - 2 * r - 1:
            holes.append((value, corner, disc))
    return holes
