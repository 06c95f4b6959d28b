"""Bad input: never a 500, always a 4xx whose body says what was wrong (TestClient)."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from PIL import Image


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def png_with_size(width: int, height: int) -> bytes:
    """A hand-made PNG header claiming ``width`` x ``height`` (8-bit grey), with a tiny IDAT."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


def post_file(client, data: bytes, name: str = "x.png", content_type: str = "image/png"):
    return client.post("/v1/predict", files={"file": (name, data, content_type)})


def check(response, status: int, code: str, *words: str):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    assert isinstance(body["detail"], str) and body["detail"]
    for word in words:
        assert word.lower() in body["detail"].lower(), body["detail"]


@pytest.fixture(scope="module")
def line_png(lines) -> bytes:
    return lines[0][0].read_bytes()


def test_non_image_bytes(client):
    check(
        post_file(client, b"this is plain text, not a picture" * 10),
        400,
        "not_an_image",
        "not a recognised image",
        "PNG",
    )


def test_truncated_png(client, line_png):
    check(post_file(client, line_png[: len(line_png) // 2]), 400, "corrupt_image", "truncated or corrupt")


def test_truncated_jpeg(client, lines):
    buffer = io.BytesIO()
    Image.open(lines[0][0]).save(buffer, format="JPEG", quality=90)
    data = buffer.getvalue()
    check(post_file(client, data[: len(data) // 2], "x.jpg", "image/jpeg"), 400, "corrupt_image", "JPEG")


@pytest.mark.parametrize("fmt", ["GIF", "PCX", "ICO"])
def test_unsupported_format(client, lines, fmt):
    buffer = io.BytesIO()
    Image.open(lines[0][0]).convert("L").crop((0, 0, 64, 64)).save(buffer, format=fmt)
    check(
        post_file(client, buffer.getvalue(), "x.bin", "application/octet-stream"),
        415,
        "unsupported_format",
        fmt,
        "not supported",
    )


def test_empty_file(client):
    check(post_file(client, b""), 400, "empty_file", "empty")


@pytest.mark.parametrize("size", [(0, 10), (10, 0)])
def test_zero_pixel_image(client, size):
    response = post_file(client, png_with_size(*size))
    assert response.status_code == 400, response.text
    assert response.json()["error"] in ("empty_image", "corrupt_image")


def test_decompression_bomb(client):
    bomb = png_bytes(Image.new("1", (30_000, 30_000)))  # 900 Mpixel, about 100 kB compressed
    assert len(bomb) < 2 * 2**20
    check(post_file(client, bomb), 413, "image_too_large")


def test_forged_header_bomb(client):
    check(post_file(client, png_with_size(60_000, 60_000)), 413, "image_too_large")


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_too_many_pixels(client):
    check(
        post_file(client, png_bytes(Image.new("L", (4_000, 1_200), 255))),
        413,
        "image_too_large",
        "4800000 pixels",
        "4000000",
    )


def test_side_too_long(client):
    check(post_file(client, png_bytes(Image.new("L", (8_001, 40), 255))), 413, "image_too_large", "8000")


def test_too_wide_for_its_height(client):
    check(
        post_file(client, png_bytes(Image.new("L", (6_000, 2), 255))), 413, "image_too_large", "too wide for its height"
    )


def test_body_over_limit(client):
    check(post_file(client, b"\0" * (2 * 2**20 + 10)), 413, "body_too_large", "limit of 2097152 bytes")


def test_invalid_base64(client):
    check(client.post("/v1/predict", json={"image": "%%% not base64 %%%"}), 400, "invalid_base64", "invalid base64")


def test_base64_of_garbage(client):
    check(client.post("/v1/predict", json={"image": base64.b64encode(b"hello").decode()}), 400, "not_an_image")


def test_data_url_not_base64(client):
    check(client.post("/v1/predict", json={"image": "data:image/png,rawbytes"}), 400, "invalid_base64", "base64")


def test_url_is_never_fetched(client):
    check(
        client.post("/v1/predict", json={"image": "http://127.0.0.1:1/line.png"}),
        400,
        "url_not_supported",
        "never fetches",
    )


def test_empty_base64(client):
    check(client.post("/v1/predict", json={"image": ""}), 400, "empty_file")


def test_missing_json_field(client):
    check(client.post("/v1/predict", json={"picture": "abc"}), 422, "missing_field", "image", "required")


def test_wrong_json_type(client):
    check(client.post("/v1/predict", json={"image": 12}), 422, "missing_field", "image")


def test_empty_json_body(client):
    check(client.post("/v1/predict", content=b"", headers={"content-type": "application/json"}), 422, "missing_field")


def test_invalid_json(client):
    check(
        client.post("/v1/predict", content=b"{not json", headers={"content-type": "application/json"}),
        400,
        "invalid_json",
    )


def test_missing_multipart_file(client):
    check(client.post("/v1/predict", files={"other": ("x.png", b"123", "image/png")}), 422, "missing_field", "'file'")


def test_multipart_file_as_text(client):
    check(
        client.post("/v1/predict", data={"file": "not a file"}, files={"dummy": ("d", b"1")}),
        422,
        "missing_field",
        "file upload",
    )


def test_no_content_type(client):
    check(
        client.post("/v1/predict", content=b"abc", headers={"content-type": ""}),
        415,
        "unsupported_media_type",
        "multipart/form-data",
    )


def test_wrong_content_type(client):
    check(
        client.post("/v1/predict", content=b"abc", headers={"content-type": "text/plain"}),
        415,
        "unsupported_media_type",
        "text/plain",
    )


def test_batch_missing_files(client):
    check(
        client.post("/v1/predict/batch", files={"file": ("x.png", b"1", "image/png")}), 422, "missing_field", "'files'"
    )


def test_batch_empty_json_list(client):
    check(client.post("/v1/predict/batch", json={"images": []}), 422, "missing_field", "images")


def test_batch_too_many(client, line_png):
    check(client.post("/v1/predict/batch", files=[("files", line_png)] * 9), 413, "too_many_images", "limit is 8")


def test_batch_names_the_bad_image(client, line_png):
    files = [("files", ("a.png", line_png, "image/png")), ("files", ("broken.png", b"garbage", "image/png"))]
    response = client.post("/v1/predict/batch", files=files)
    assert response.status_code == 200, response.text
    bad = response.json()["results"][1]
    assert bad["prediction"] is None and bad["error"]["code"] == "not_an_image" and bad["error"]["status"] == 400
    assert "files[1]" in bad["error"]["detail"] and "broken.png" in bad["error"]["detail"]


def test_method_and_path_errors(client):
    assert client.get("/v1/predict").status_code == 405
    assert client.get("/nope").status_code == 404


def test_server_still_healthy_after_bad_input(client, lines):
    assert client.get("/health").status_code == 200
    r = post_file(client, lines[0][0].read_bytes())
    assert r.status_code == 200 and r.json()["text"] == lines[0][1]
