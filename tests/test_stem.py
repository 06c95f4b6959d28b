"""Tests for text_recognizer.stem: any PIL image -> (1, H, W) float in [0, 1], ink high."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from text_recognizer.data.synthetic import render_line
from text_recognizer.stem import DEFAULT_HEIGHT, normalise_ink, preprocess, to_grayscale

W, H = 240, 60
BLOCK = (150, 15, 190, 45)  # a solid ink block: its centre must come out as ink = 1


def draw(image: Image.Image, ink) -> Image.Image:
    """Text, an underline and a solid block, in colour ``ink``, onto ``image`` (in place)."""
    d = ImageDraw.Draw(image)
    d.text((10, 10), "Hello, world", fill=ink)
    d.line((10, 50, 140, 50), fill=ink, width=3)
    d.rectangle(BLOCK, fill=ink)
    return image


def page(mode: str = "L", paper=255, ink=0, size=(W, H)) -> Image.Image:
    return draw(Image.new(mode, size, paper), ink)


@pytest.fixture(scope="module")
def reference() -> torch.Tensor:
    return preprocess(page())


def assert_line_tensor(t: torch.Tensor, height: int = DEFAULT_HEIGHT) -> None:
    assert isinstance(t, torch.Tensor)
    assert t.dtype == torch.float32
    assert t.dim() == 3 and t.shape[0] == 1 and t.shape[1] == height
    assert float(t.min()) >= 0.0 and float(t.max()) <= 1.0
    assert torch.isfinite(t).all()


def block_centre(t: torch.Tensor, size=(W, H)) -> float:
    """Output value at the centre of ``BLOCK`` (scaled like the stem scales the image)."""
    scale = t.shape[1] / size[1]
    x = round((BLOCK[0] + BLOCK[2]) / 2 * scale)
    y = round((BLOCK[1] + BLOCK[3]) / 2 * scale)
    return float(t[0, y, x])


def paper_corner(t: torch.Tensor) -> float:
    return float(t[0, :5, -5:].max())  # top-right corner: never inked


def test_reference_is_ink_high(reference: torch.Tensor) -> None:
    assert_line_tensor(reference)
    assert reference.shape == (1, DEFAULT_HEIGHT, round(W * DEFAULT_HEIGHT / H))
    assert block_centre(reference) > 0.95
    assert paper_corner(reference) < 0.05
    # most of a line image is paper
    assert float((reference < 0.1).float().mean()) > 0.6


def _i16(image: Image.Image) -> Image.Image:
    array = np.asarray(image.convert("L")).astype(np.uint16) * 257  # full 16-bit range
    im = Image.fromarray(array)
    assert im.mode == "I;16"
    return im


def _i_large(image: Image.Image) -> Image.Image:
    array = np.asarray(image.convert("L")).astype(np.int32) * 257  # "I" holding 16-bit values
    im = Image.fromarray(array)
    assert im.mode == "I"
    return im


def _p_with_transparency() -> Image.Image:
    # palette index 0 is transparent black (the paper), index 1 opaque black (the ink): only the
    # transparency tells them apart
    im = Image.new("P", (W, H), 0)
    im.putpalette([0, 0, 0, 0, 0, 0] + [255] * (254 * 3))
    draw(im, 1)
    im.info["transparency"] = 0
    # through a real PNG file, as uploads arrive
    buffer = io.BytesIO()
    im.save(buffer, format="PNG")
    buffer.seek(0)
    out = Image.open(buffer)
    out.load()
    assert out.mode == "P" and "transparency" in out.info
    return out


CONVERSIONS = {
    "L": lambda im: im,
    "RGB": lambda im: im.convert("RGB"),
    "RGBA opaque": lambda im: im.convert("RGBA"),
    "LA": lambda im: im.convert("LA"),
    "P": lambda im: im.convert("RGB").convert("P", palette=Image.Palette.ADAPTIVE, colors=16),
    "CMYK": lambda im: im.convert("RGB").convert("CMYK"),
    "1": lambda im: im.convert("1", dither=Image.Dither.NONE),
    "I": lambda im: im.convert("I"),
    "I large": _i_large,
    "I;16": _i16,
    "F": lambda im: im.convert("F"),
    "F unit": lambda im: Image.fromarray(np.asarray(im, dtype=np.float32) / 255.0),
}


@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_every_mode_gives_the_same_tensor(name: str, reference: torch.Tensor) -> None:
    image = CONVERSIONS[name](page())
    out = preprocess(image)
    assert_line_tensor(out)
    assert out.shape == reference.shape
    assert block_centre(out) > 0.95
    assert paper_corner(out) < 0.05
    assert float((out - reference).abs().mean()) < 0.01


def test_rgb_coloured_ink_on_tinted_paper(reference: torch.Tensor) -> None:
    out = preprocess(page("RGB", paper=(250, 240, 200), ink=(20, 30, 160)))
    assert block_centre(out) > 0.95 and paper_corner(out) < 0.05
    assert float((out - reference).abs().mean()) < 0.01


def test_rgba_transparent_background_dark_ink(reference: torch.Tensor) -> None:
    image = page("RGBA", paper=(0, 0, 0, 0), ink=(0, 0, 0, 255))  # black ink, transparent black canvas
    out = preprocess(image)
    assert_line_tensor(out)
    assert block_centre(out) > 0.95 and paper_corner(out) < 0.05
    assert float((out - reference).abs().mean()) < 0.01


@pytest.mark.parametrize("canvas", [(255, 255, 255, 0), (0, 0, 0, 0)])
def test_rgba_transparent_background_light_ink(canvas, reference: torch.Tensor) -> None:
    image = page("RGBA", paper=canvas, ink=(255, 255, 255, 255))  # white ink on a transparent canvas
    out = preprocess(image)
    assert_line_tensor(out)
    assert block_centre(out) > 0.95 and paper_corner(out) < 0.05
    assert float((out - reference).abs().mean()) < 0.01


def test_p_with_transparency(reference: torch.Tensor) -> None:
    out = preprocess(_p_with_transparency())
    assert_line_tensor(out)
    assert block_centre(out) > 0.95 and paper_corner(out) < 0.05
    assert float((out - reference).abs().mean()) < 0.01


def test_to_grayscale_is_luminance_white_high() -> None:
    gray = to_grayscale(page())
    assert gray.dtype == np.float32 and gray.shape == (H, W)
    assert gray.min() == 0.0 and gray.max() == 1.0
    assert gray[0, -1] == 1.0  # paper is white
    gray16 = to_grayscale(_i16(page()))
    np.testing.assert_allclose(gray16, gray, atol=1e-6)


@pytest.mark.parametrize("polarity_of", ["drawing", "synthetic"])
def test_both_polarities_give_the_same_tensor(polarity_of: str) -> None:
    if polarity_of == "drawing":
        dark_on_light = page()
    else:
        dark_on_light = render_line("A quick brown fox, 1984.", np.random.default_rng(0), height=64)
    light_on_dark = Image.fromarray(255 - np.asarray(dark_on_light.convert("L")))
    a, b = preprocess(dark_on_light), preprocess(light_on_dark)
    assert a.shape == b.shape
    assert float((a - b).abs().max()) < 1e-3
    assert float(a.max()) > 0.95  # the ink is there, and high
    assert float(a.median()) < 0.05  # the paper is low


def test_synthetic_line_is_ink_high_and_keeps_height() -> None:
    image = render_line("Handwriting is hard.", np.random.default_rng(0), height=64)
    out = preprocess(image, height=64)
    assert_line_tensor(out, 64)
    assert out.shape[2] == image.width  # already 64 px high: width unchanged
    ink = 1.0 - np.asarray(image, dtype=np.float32) / 255.0
    # the darkest pixels of the image are the brightest of the output
    dark = ink > np.percentile(ink, 99.5)
    assert float(out[0].numpy()[dark].mean()) > 0.9
    assert float(np.median(out[0].numpy())) < 0.05


@pytest.mark.parametrize(
    ("size", "height"), [((240, 60), 64), ((240, 60), 32), ((100, 25), 48), ((77, 33), 64), ((50, 200), 64)]
)
def test_aspect_ratio_kept(size, height: int) -> None:
    out = preprocess(page(size=size), height=height)
    assert_line_tensor(out, height)
    assert out.shape[2] == max(8, round(size[0] * height / size[1]))


@pytest.mark.parametrize("size", [(1, 1), (2, 1), (1, 2), (3, 3), (7, 64), (1, 300), (4000, 16)])
def test_any_size(size) -> None:
    image = Image.new("L", size, 255)
    ImageDraw.Draw(image).line((0, 0, size[0] - 1, size[1] - 1), fill=0)
    out = preprocess(image)
    assert_line_tensor(out)
    assert out.shape[2] >= 8  # narrow results are padded to a minimum width
    assert out.shape[2] == max(8, round(size[0] * DEFAULT_HEIGHT / size[1]))


def test_very_wide_line() -> None:
    image = page(size=(6000, 40))
    out = preprocess(image)
    assert out.shape == (1, DEFAULT_HEIGHT, 9600)
    assert float(out.max()) > 0.95 and float(out[0, :, -100:].max()) < 0.05


def test_blank_images_are_all_paper() -> None:
    for colour in (0, 128, 255):
        out = preprocess(Image.new("L", (100, 30), colour))
        assert float(out.abs().max()) == 0.0


def _exif_jpeg(image: Image.Image, orientation: int) -> Image.Image:
    exif = Image.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=95, exif=exif)
    buffer.seek(0)
    out = Image.open(buffer)
    assert out.getexif()[0x0112] == orientation
    return out


@pytest.mark.parametrize(("orientation", "upright"), [(6, Image.Transpose.ROTATE_270), (8, Image.Transpose.ROTATE_90)])
def test_exif_orientation_honoured(orientation: int, upright) -> None:
    # the camera stored the line rotated; EXIF says how to turn it for display
    stored = page(size=(240, 60))
    out = preprocess(_exif_jpeg(stored, orientation))
    displayed = stored.transpose(upright)  # 60 x 240: tall
    assert out.shape == (1, DEFAULT_HEIGHT, 16)  # the width/height swap happened
    expected = preprocess(displayed)
    assert float((out - expected).abs().mean()) < 0.03
    # and it was rotated the right way (not the opposite one)
    wrong = preprocess(displayed.transpose(Image.Transpose.ROTATE_180))
    assert float((out - expected).abs().mean()) < float((out - wrong).abs().mean()) / 2


def test_exif_orientation_1_is_untouched(reference: torch.Tensor) -> None:
    out = preprocess(_exif_jpeg(page(), 1))
    assert out.shape == reference.shape


def test_low_contrast_grey_photo_normalised_to_full_range(reference: torch.Tensor) -> None:
    rng = np.random.default_rng(0)
    image = page(paper=150, ink=115)
    noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, 1.5, (H, W))
    photo = Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))
    out = preprocess(photo)
    assert_line_tensor(out)
    assert block_centre(out) > 0.9
    assert float(out.median()) < 0.05
    assert float(out.max()) == pytest.approx(1.0)
    assert float((out - reference).abs().mean()) < 0.03


def test_normalise_ink_directly() -> None:
    gray = np.full((10, 40), 0.8, dtype=np.float32)
    gray[4:6, 5:35] = 0.3  # dark ink
    ink = normalise_ink(gray)
    assert ink.dtype == np.float32
    assert ink[5, 10] == pytest.approx(1.0) and ink[0, 0] == pytest.approx(0.0)
    np.testing.assert_allclose(normalise_ink(1.0 - gray), ink, atol=1e-6)  # polarity-free
    assert not normalise_ink(np.full((5, 5), 0.4, dtype=np.float32)).any()


@pytest.mark.parametrize("size", [(0, 10), (10, 0), (0, 0)])
def test_zero_pixel_image_raises(size) -> None:
    with pytest.raises(ValueError, match="no pixels"):
        preprocess(Image.new("L", size))


@pytest.mark.parametrize(
    "thing", [np.zeros((10, 10), dtype=np.uint8), torch.zeros(1, 10, 10), b"\x89PNG", "line.png", None]
)
def test_non_image_raises_type_error(thing) -> None:
    with pytest.raises(TypeError, match="PIL.Image.Image"):
        preprocess(thing)


def test_height_too_small_raises() -> None:
    with pytest.raises(ValueError, match="height"):
        preprocess(page(), height=4)


def test_deterministic(reference: torch.Tensor) -> None:
    assert torch.equal(preprocess(page()), reference)


@pytest.mark.parametrize("width", [300, 3000])
def test_sparse_ink_on_noisy_paper_stays_clean(width: int) -> None:
    # one short word on a long, slightly noisy line: under 0.5 % of the pixels are ink, so the
    # 99.5th percentile alone would be paper noise and the noise would be stretched up to ink
    rng = np.random.default_rng(0)
    image = Image.new("L", (width, 40), 200)
    ImageDraw.Draw(image).text((5, 10), "Hi", fill=40)
    noisy = np.clip(np.asarray(image, dtype=np.float32) + rng.normal(0, 2, (40, width)), 0, 255)
    out = preprocess(Image.fromarray(noisy.astype(np.uint8)))
    assert float(out.max()) > 0.95  # the ink is still full strength
    paper = out[0, :, -out.shape[2] // 3 :]  # right third: paper only
    assert float(paper.mean()) < 0.03
    assert float((paper > 0.5).float().mean()) < 0.001
