"""The page image: paper tone, light, texture and bleed-through, then rules, threads, stamps, the ink and
punch holes, in grey or colour, perhaps re-compressed as JPEG.

Why a module of its own: this is the only full-page pixel work, so it is where a page's time goes. The
page is put together as 8-bit PIL images: a multiply (``ImageChops.multiply``), a 256-entry lookup
(``Image.point``) or an add is one fast C pass over the page, where float arrays would need several.
The pixel noise goes into the light before the ink; light, texture and bleed-through are drawn at a
quarter of the size and enlarged; rules and threads are copied from 1-D profiles (``patterns``).
"""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image, ImageChops, ImageFilter

from text_recognizer.segmentation.synthetic.marks import holes, letterhead, stamp
from text_recognizer.segmentation.synthetic.patterns import margin_rule, rules, weave
from text_recognizer.segmentation.synthetic.style import Style


def lut(f) -> list[int]:
    """A 256-entry lookup table of ``f(v)`` for v = 0..255, rounded and clipped to 0..255."""
    return np.clip(np.rint(f(np.arange(256, dtype=np.float64))), 0, 255).astype(np.uint8).tolist()


def darken(plane: Image.Image, cover: Image.Image, amount: float,
           box: tuple[int, int, int, int] | None = None) -> Image.Image:
    """``plane`` times ``1 - amount * cover / 255`` (within ``box`` only, when given)."""
    term = cover.point(lut(lambda v: 255 - amount * v))
    if box is None:
        return ImageChops.multiply(plane, term)
    plane.paste(ImageChops.multiply(plane.crop(box), term), box[:2])
    return plane


def finish(canvas: np.ndarray, style: Style, phase: float, rng: np.random.Generator) -> Image.Image:
    """The page image: paper (tone, light, texture, pixel noise, woven or laid threads, rules,
    bleed-through, stamp, letterhead) darkened by the ink (``canvas``, 255: full ink), then punch holes and JPEG.

    The pixel noise goes into the light field, before the ink and the channels: one pass instead of
    one per channel, and it then scales with the light like a camera's shot noise."""
    H, W = canvas.shape
    ink = Image.fromarray(canvas)
    if style.pencil:  # graphite leaves grain: up to half the ink is missing, pixel by pixel
        grain = Image.frombytes("L", (W, H), rng.bytes(H * W)).point(lut(lambda v: 255 - v / 2))
        ink = ImageChops.multiply(ink, grain)
    spread = style.noise * math.sqrt(3)  # uniform noise on [-spread, spread] has std ``style.noise``
    field = light(canvas, style, rng, headroom=math.ceil(spread))
    noise = Image.frombytes("L", (W, H), rng.bytes(H * W)).point(lut(lambda v: v / 255 * 2 * spread))
    field = ImageChops.add(field, noise, 1.0, -round(spread))
    ruling = rules(style, phase)
    margin = margin_rule(style) if style.margin_rule else None
    mark = stamp(style, rng) if style.stamp else None
    printed = letterhead(style, rng) if style.letterhead else None
    punched = holes(style, rng) if style.holes else []
    for threads in weave(style, rng):  # drawn last: the rest of the page does not depend on it
        field = ImageChops.multiply(field, threads)

    colours = np.array([style.paper, style.grid_colour, style.ink, (0.8, 0.2, 0.25)])
    if not style.rgb:
        colours = colours @ np.array([[0.299], [0.587], [0.114]])
    planes = []
    for channel in range(colours.shape[1]):
        paper, rule, dark, red = colours[:, channel]
        plane = field if ruling is None else darken(field, ruling, style.grid_strength * (1 - rule))
        if margin is not None:
            plane = darken(plane, margin[1], 0.8 * (1 - red), margin[0])
        for box, cover, colour in filter(None, (mark, printed)):
            plane = darken(plane, cover, 1 - float(colour[channel] if style.rgb else colour @ (0.299, 0.587, 0.114)),
                           box)
        # The paper's tone rides on the ink's lookup table: one pass less per channel.
        plane = ImageChops.multiply(plane, ink.point(lut(lambda v, p=paper, k=1 - dark: p * (255 - k * v))))
        for value, corner, disc in punched:
            plane.paste(value, corner, disc)
        planes.append(plane)
    image = Image.merge("RGB", planes) if style.rgb else planes[0]
    if style.jpeg:
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=style.jpeg)
        image = Image.open(io.BytesIO(buffer.getvalue()))
        image.load()
    return image


def light(canvas: np.ndarray, style: Style, rng: np.random.Generator, headroom: int = 0) -> Image.Image:
    """Page-size 8-bit factor (``255 - headroom``: full light, room left for the noise): a light
    gradient, a vignette, slow blotches, paper texture and the other side's writing showing through
    (the lines' ink ``canvas``, mirrored and shifted), drawn at a quarter of the size and enlarged (all
    of it is smooth at that scale)."""
    H, W = style.height, style.width
    h, w = max(2, H // 4), max(2, W // 4)
    y = np.linspace(-1, 1, h, dtype=np.float32)[:, None]
    x = np.linspace(-1, 1, w, dtype=np.float32)[None, :]
    direction = rng.normal(size=2)
    direction /= np.linalg.norm(direction) + 1e-9
    strength = style.lighting
    field = 1 + strength * 0.5 * (direction[0] * x + direction[1] * y)
    cx, cy = rng.uniform(-0.5, 0.5, 2)
    field = field * (1 - strength * 0.5 * ((x - cx) ** 2 + (y - cy) ** 2))
    blotches = Image.fromarray(rng.normal(0, 0.02, (3, 4)).astype(np.float32), "F")
    blotches = blotches.resize((w, h), Image.Resampling.BICUBIC)
    field = field * (1 + np.asarray(blotches)) * (1 + style.texture * rng.standard_normal((h, w), dtype=np.float32))
    field = field * np.float32((255 - headroom) / field.max())
    if style.bleed:
        back = Image.fromarray(canvas).resize((w, h), Image.Resampling.BOX).filter(ImageFilter.BoxBlur(1))
        back = np.roll(np.asarray(back, dtype=np.float32)[:, ::-1], int(rng.integers(0, h)), axis=0)
        field *= 1 - back * np.float32(style.bleed / 255)
    small = np.clip(field, 0, 255).astype(np.uint8)
    return Image.fromarray(small).resize((W, H), Image.Resampling.BILINEAR)
