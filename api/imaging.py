"""Safe decoding of untrusted image bytes: every failure becomes an ``APIError`` with a
status code and a message for the client, never an unhandled exception.

Checks, in order: empty body; format sniffed from the header (PNG, JPEG, TIFF, BMP, WebP only);
size read from the header and checked against the pixel and side limits *before* any pixel is
decoded (Pillow's own decompression-bomb limit is lowered to the same pixel budget as a second
line of defence); then a full decode, which catches truncated and corrupt files.
"""

from __future__ import annotations

import base64
import binascii
import io
import re

from PIL import Image, UnidentifiedImageError

from api.errors import APIError

ALLOWED_FORMATS = ("PNG", "JPEG", "TIFF", "BMP", "WEBP")
ALLOWED_TEXT = "PNG, JPEG, TIFF, BMP or WebP"
_EXIF_ORIENTATION = 0x0112
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"BM", "BMP"),
)


def set_pillow_limits(max_pixels: int) -> None:
    """Lower Pillow's process-wide decompression-bomb threshold to the serving pixel budget."""
    Image.MAX_IMAGE_PIXELS = max_pixels


def decode_base64(text: str, what: str = "image") -> bytes:
    """Plain base64 or a ``data:image/...;base64,`` URL -> bytes (``APIError`` 400 if invalid)."""
    text = text.strip()
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text):
        raise APIError(
            400,
            "url_not_supported",
            f"{what}: looks like a URL; the server never fetches URLs, send the image bytes as base64",
        )
    if text.startswith("data:"):
        header, comma, payload = text.partition(",")
        if not comma:
            raise APIError(400, "invalid_base64", f"{what}: data URL has no ',' separating the header from the data")
        if not header.lower().endswith(";base64"):
            raise APIError(
                400,
                "invalid_base64",
                f"{what}: data URL must be base64-encoded (data:image/png;base64,...), got header {header[:60]!r}",
            )
        text = payload
    compact = "".join(text.split())
    if not compact:
        raise APIError(400, "empty_file", f"{what}: the base64 string is empty")
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as error:
        raise APIError(400, "invalid_base64", f"{what}: invalid base64 ({error})") from None


def upright_size(image: Image.Image) -> tuple[int, int]:
    """``(width, height)`` after applying the EXIF orientation (as the stem will)."""
    try:
        orientation = image.getexif().get(_EXIF_ORIENTATION, 1)
    except Exception:  # malformed EXIF: the stem's exif_transpose will deal with it (or fail cleanly)
        orientation = 1
    return (image.height, image.width) if orientation in (5, 6, 7, 8) else (image.width, image.height)


def decode_image(data: bytes, *, max_pixels: int, max_side: int, what: str = "image",
                 kind: str = "text line") -> Image.Image:
    """Untrusted bytes -> a fully loaded PIL image within the limits, or ``APIError``; ``kind`` names what
    the image should be (a text line, a page) in the messages."""
    if not data:
        raise APIError(400, "empty_file", f"{what}: the file is empty (0 bytes)")
    try:
        image = Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
    except UnidentifiedImageError:
        raise _unsupported_or_garbage(data, what, kind) from None
    except Image.DecompressionBombError as error:
        raise APIError(413, "image_too_large", f"{what}: rejected as a decompression bomb ({error})") from None
    except Exception as error:  # header parsers raise many types on malformed input
        raise APIError(400, "corrupt_image", f"{what}: corrupt {ALLOWED_TEXT} header ({error})") from None
    width, height = image.size
    if width <= 0 or height <= 0:
        raise APIError(400, "empty_image", f"{what}: the image has no pixels ({width}x{height})")
    if width * height > max_pixels:
        raise APIError(
            413,
            "image_too_large",
            f"{what}: {width}x{height} = {width * height} pixels exceeds the limit of {max_pixels} pixels "
            f"for a {kind}",
        )
    if max(width, height) > max_side:
        raise APIError(
            413,
            "image_too_large",
            f"{what}: {width}x{height} has a side longer than the limit of {max_side} pixels for a {kind}",
        )
    try:
        image.load()
    except Image.DecompressionBombError as error:
        raise APIError(413, "image_too_large", f"{what}: rejected as a decompression bomb ({error})") from None
    except Exception as error:
        raise APIError(
            400, "corrupt_image", f"{what}: the {image.format} data is truncated or corrupt ({error})"
        ) from None
    return image


def _unsupported_or_garbage(data: bytes, what: str, kind: str = "text line") -> APIError:
    """Tell apart an image in a format we do not accept (415) from bytes that are no image (400)."""
    fmt = None
    try:
        with Image.open(io.BytesIO(data)) as other:  # header only: no pixels are decoded
            fmt = other.format
    except Exception:
        pass
    if fmt is None:
        fmt = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            fmt = "WEBP"
        if fmt in ALLOWED_FORMATS:
            return APIError(
                400,
                "corrupt_image",
                f"{what}: starts like a {fmt} file but its header is invalid "
                "(corrupt, truncated, or a size of 0 pixels)",
            )
    if fmt:
        return APIError(415, "unsupported_format", f"{what}: {fmt} images are not supported; send {ALLOWED_TEXT}")
    accepted = f"{ALLOWED_TEXT}, or a PDF" if kind == "page" else ALLOWED_TEXT
    return APIError(400, "not_an_image", f"{what}: not a recognised image file; send {accepted}")
