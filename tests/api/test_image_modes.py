"""EXIF orientation, palette, alpha, 16-bit, CMYK, light-on-dark and every accepted format give the right text."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image, ImageOps

from text_recognizer.stem import to_grayscale


def encode(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def predict(client, data: bytes) -> dict:
    r = client.post("/v1/predict", files={"file": ("line", data, "application/octet-stream")})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def sample(lines):
    path, text = lines[0]
    return Image.open(path).convert("L"), text


@pytest.mark.parametrize(
    "orientation, transpose",
    [(6, Image.Transpose.ROTATE_90), (8, Image.Transpose.ROTATE_270), (3, Image.Transpose.ROTATE_180)],
)
def test_exif_orientation(client, sample, orientation, transpose):
    image, text = sample
    stored = image.transpose(transpose)  # as a camera would store it; the tag says how to turn it upright
    exif = Image.Exif()
    exif[0x0112] = orientation
    body = predict(client, encode(stored, "PNG", exif=exif))
    assert body["text"] == text
    assert (body["image_width"], body["image_height"]) == image.size


def test_palette(client, sample):
    image, text = sample
    assert (
        predict(client, encode(image.convert("RGB").convert("P", palette=Image.Palette.ADAPTIVE, colors=256), "PNG"))[
            "text"
        ]
        == text
    )


def test_alpha_ink_on_transparent(client, sample):
    image, text = sample
    ink = ImageOps.invert(image)
    rgba = Image.new("RGBA", image.size, (0, 0, 0, 0))
    rgba.putalpha(ink)
    assert predict(client, encode(rgba, "PNG"))["text"] == text


def test_light_ink_on_transparent_canvas(client, sample):
    image, text = sample
    rgba = Image.new("RGBA", image.size, (255, 255, 255, 0))
    rgba.putalpha(ImageOps.invert(image))  # white strokes, alpha = ink
    assert predict(client, encode(rgba, "PNG"))["text"] == text


def test_grey_with_alpha(client, sample):
    image, text = sample
    la = Image.merge("LA", (image, Image.new("L", image.size, 255)))
    assert predict(client, encode(la, "PNG"))["text"] == text


def test_sixteen_bit(client, sample):
    image, text = sample
    array = (np.asarray(image, dtype=np.uint16) * 257).astype(np.uint16)
    deep = Image.fromarray(array)  # uint16 -> mode I;16
    data = encode(deep, "PNG")
    assert Image.open(io.BytesIO(data)).mode.startswith("I")
    assert predict(client, data)["text"] == text


def test_cmyk(client, sample):
    image, text = sample
    data = encode(image.convert("RGB").convert("CMYK"), "TIFF")
    assert Image.open(io.BytesIO(data)).mode == "CMYK"
    assert predict(client, data)["text"] == text


def test_cmyk_jpeg(client, sample):
    image, text = sample
    data = encode(image.convert("RGB").convert("CMYK"), "JPEG", quality=95)
    decoded = Image.open(io.BytesIO(data))
    assert decoded.mode == "CMYK"
    # The same picture, not its negative (CMYK JPEGs are often stored inverted), up to JPEG's loss.
    assert np.abs(to_grayscale(decoded) - np.asarray(image, dtype=np.float32) / 255).mean() < 0.02
    assert predict(client, data)["text"] == text


def test_light_on_dark(client, sample):
    image, text = sample
    assert predict(client, encode(ImageOps.invert(image), "PNG"))["text"] == text


def test_bilevel(client, sample):
    image, text = sample
    data = encode(image.point(lambda v: 255 if v > 128 else 0).convert("1"), "PNG")
    decoded = Image.open(io.BytesIO(data))
    assert decoded.mode == "1"
    assert np.array_equal(to_grayscale(decoded), (np.asarray(image) > 128).astype(np.float32))  # exact 0/1 pixels
    assert predict(client, data)["text"] == text


@pytest.mark.parametrize(
    "fmt, kwargs", [("PNG", {}), ("TIFF", {}), ("BMP", {}), ("WEBP", {"lossless": True}), ("JPEG", {"quality": 98})]
)
def test_accepted_formats(client, sample, fmt, kwargs):
    image, text = sample
    body = predict(client, encode(image, fmt, **kwargs))
    if fmt == "JPEG":  # lossy: the overfit toy model may slip a character, but it must answer
        assert body["text"]
    else:
        assert body["text"] == text


def test_multiframe_tiff_uses_first_frame(client, sample):
    image, text = sample
    data = encode(image, "TIFF", save_all=True, append_images=[ImageOps.invert(image), image.rotate(3)])
    assert predict(client, data)["text"] == text


def test_base64_rgba_data_url(client, sample):
    image, text = sample
    data = encode(image.convert("RGBA"), "PNG")
    r = client.post("/v1/predict", json={"image": "data:image/png;base64," + base64.b64encode(data).decode()})
    assert r.status_code == 200 and r.json()["text"] == text
