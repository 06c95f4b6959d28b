"""``POST /v1/predict/page`` against a real uvicorn server: a page composed from the fixture lines is read
line by line (polygons where the lines were pasted), as JSON, PAGE-XML and ALTO (valid against the official
schemas), from multipart and base64 JSON; bad uploads are 4xx with a message, a blank page has zero lines,
a line that cannot be read is reported in the line (TestClient), and the route is in the OpenAPI schema."""

from __future__ import annotations

import base64
import io

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.api.test_bad_input import png_with_size
from tests.segmentation.test_classical import compose_page
from tests.test_page_formats import alto_schema, assert_valid, page_schema
from text_recognizer.metrics import cer
from text_recognizer.page_reader import PageReader
from text_recognizer.recognizer import LineRecognizer
from text_recognizer.segmentation.scoring import match_lines

ROUTE = "/v1/predict/page"


def encoded(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def composed(lines) -> tuple[bytes, list, list[str]]:
    """A page of all fixture lines (PNG bytes), the boxes they were pasted at and their texts."""
    page, truth = compose_page([path.name for path, _ in lines])
    return encoded(page), truth, [text for _, text in lines]


def post(server, data: bytes, name: str = "page.png", content_type: str = "image/png", **params) -> httpx.Response:
    return httpx.post(server.url + ROUTE, files={"file": (name, data, content_type)}, params=params, timeout=120)


def check(response: httpx.Response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    for word in words:
        assert word.lower() in body["detail"].lower(), body["detail"]


@pytest.fixture(scope="module")
def read(server, composed) -> dict:
    response = post(server, composed[0], name="letter.png")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def test_a_composed_page_is_read_line_by_line(read, composed):
    _, truth, texts = composed
    assert read["image"] == "letter.png" and read["width"] == 1400
    assert len(read["lines"]) == len(truth)
    matching = match_lines([line["polygon"] for line in read["lines"]], truth, (read["width"], read["height"]))
    assert sorted((found, true) for found, true, _ in matching.pairs) == [(i, i) for i in range(len(truth))]
    for number, line in enumerate(read["lines"], start=1):
        assert line["id"] == f"line_{number}" and line["error"] is None
        assert len(line["polygon"]) >= 3 and len(line["baseline"]) >= 2
        assert line["text"] and 0.0 <= line["confidence"] <= 1.0
        for word in line["words"]:
            assert len(word["polygon"]) == 4 and 0.0 <= word["confidence"] <= 1.0
    assert read["text"] == "\n".join(line["text"] for line in read["lines"])
    assert cer(texts, [line["text"] for line in read["lines"]]) < 0.8  # the tiny model, overfit on the line files


def test_the_route_answers_what_the_library_reads(read, composed, tiny_checkpoint):
    """The server's page is ``PageReader``'s page with the same model (greedy, one reading)."""
    page = Image.open(io.BytesIO(composed[0]))
    expected = PageReader(LineRecognizer(tiny_checkpoint)).read(page, name="letter.png").to_dict()
    served = {key: read[key] for key in expected}
    for line in served["lines"]:
        for key in ("error", "language"):  # the API's lines always have the fields; the library's only when set
            if line[key] is None:
                del line[key]
    assert served == expected


def test_json_has_the_line_routes_metadata(read):
    assert read["model_version"].startswith("best-")
    for key in ("elapsed_ms", "segment_ms", "inference_ms", "preprocess_ms", "queue_ms"):
        assert isinstance(read[key], float) and read[key] >= 0.0, key
    assert read["elapsed_ms"] >= read["segment_ms"] + read["inference_ms"]


@pytest.mark.parametrize("fmt, root", [("page", "PcGts"), ("alto", "alto")])
def test_xml_formats_are_valid(server, composed, fmt, root):
    from lxml import etree

    response = post(server, composed[0], format=fmt)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/xml"
    assert response.headers["x-model-version"].startswith("best-")
    assert_valid(page_schema() if fmt == "page" else alto_schema(), response.content)
    document = etree.fromstring(response.content)
    assert etree.QName(document).localname == root
    lines = [e for e in document.iter() if etree.QName(e).localname == "TextLine"]
    assert len(lines) == len(composed[1])


def test_base64_json_body(server, composed, read):
    text = base64.b64encode(composed[0]).decode()
    for image in (text, "data:image/png;base64," + text):
        response = httpx.post(server.url + ROUTE, json={"image": image}, timeout=120)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["image"] == "image"
        assert [line["text"] for line in body["lines"]] == [line["text"] for line in read["lines"]]


def test_decoder_and_readings_parameters(server, composed):
    response = post(server, composed[0], decoder="greedy", readings="1")
    assert response.status_code == 200, response.text
    check(post(server, composed[0], decoder="nonsense"), 422, "unknown_decoder", "greedy")
    check(post(server, composed[0], readings="2"), 422, "bad_readings")
    check(post(server, composed[0], format="docx"), 422, "unknown_format", "json", "page", "alto", "pdf", "hocr")


@pytest.mark.parametrize("size", [(1200, 900), (1, 1)])
def test_a_blank_page_has_no_lines(server, size):
    response = post(server, encoded(Image.new("RGB", size, (240, 236, 225))))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["lines"] == [] and body["text"] == "" and (body["width"], body["height"]) == size
    xml = post(server, encoded(Image.new("L", size, 255)), format="alto")
    assert xml.status_code == 200 and b"TextLine" not in xml.content
    assert_valid(alto_schema(), xml.content)


def test_truncated_jpeg(server, composed):
    jpeg = encoded(Image.open(io.BytesIO(composed[0])).convert("RGB"), "JPEG", quality=85)
    check(post(server, jpeg[: len(jpeg) // 2], "page.jpg", "image/jpeg"), 400, "corrupt_image", "truncated or corrupt")


def test_text_file(server):
    check(post(server, b"Dear Sir, this is not a scan.\n" * 20, "letter.txt", "text/plain"), 400, "not_an_image",
          "not a recognised image", "PNG")


def test_empty_upload(server):
    check(post(server, b""), 400, "empty_file", "empty")
    check(httpx.post(server.url + ROUTE, json={"image": ""}, timeout=30), 400, "empty_file", "empty")


def test_missing_field_and_empty_body(server):
    check(httpx.post(server.url + ROUTE, files={"other": ("x.png", b"x", "image/png")}, timeout=30), 422,
          "missing_field", "'file'")
    check(httpx.post(server.url + ROUTE, content=b"", headers={"content-type": "application/json"}, timeout=30), 422,
          "missing_field", "empty")


def test_over_the_pixel_limit(server):
    # the server's TEXT_RECOGNIZER_MAX_PIXELS is 4 000 000 (tests/api/conftest.py): refused from the header
    check(post(server, png_with_size(3000, 2000)), 413, "image_too_large", "pixels", "page")
    check(post(server, png_with_size(9000, 10)), 413, "image_too_large", "side", "page")


def test_over_the_body_limit(server):
    noise = Image.effect_noise((1400, 1400), 120).convert("RGB")  # ~5 MB as PNG: over the 2 MiB body limit
    check(post(server, encoded(noise)), 413, "body_too_large")


def test_image_modes(client, lines):
    """Pages in other modes (16-bit grey, palette, CMYK JPEG, RGBA) are read too."""
    page, truth = compose_page([path.name for path, _ in lines[:3]])
    samples = {
        "I;16": encoded(Image.fromarray(np.asarray(page).astype(np.uint16) * 257)),
        "P": encoded(page.convert("P")),
        "CMYK": encoded(page.convert("CMYK"), "JPEG", quality=90),
        "RGBA": encoded(page.convert("RGBA")),
    }
    for mode, data in samples.items():
        response = client.post(ROUTE, files={"file": (f"{mode}.png", data, "image/png")})
        assert response.status_code == 200, (mode, response.text)
        assert len(response.json()["lines"]) == len(truth), mode


def test_a_line_that_cannot_be_read_does_not_fail_the_page(client, composed, monkeypatch):
    recognizer = client.app.state.model.serving.recognizer
    calls = []

    def broken(tensors, sizes=None, **options):
        calls.append(len(tensors))
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(recognizer, "predict_tensors", broken)
    response = client.post(ROUTE, files={"file": ("page.png", composed[0], "image/png")})
    assert response.status_code == 200, response.text
    body = response.json()
    assert len(body["lines"]) == len(composed[1]) and body["text"] == ""
    for line in body["lines"]:
        assert line["text"] == "" and line["confidence"] is None
        assert "cannot read the line" in line["error"] and "simulated" in line["error"]
    assert calls[0] == len(composed[1]) and calls[1:] == [1] * len(composed[1])  # together, then one by one


def test_openapi_documents_the_route(server):
    schema = httpx.get(server.url + "/openapi.json", timeout=30).json()
    operation = schema["paths"][ROUTE]["post"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert set(parameters) == {"decoder", "readings", "language", "format", "dpi"}
    assert parameters["format"]["schema"]["enum"] == ["json", "page", "alto", "pdf", "hocr"]
    assert set(operation["requestBody"]["content"]) == {"multipart/form-data", "application/json", "image/*",
                                                        "application/pdf"}
    ok = operation["responses"]["200"]["content"]
    answers = [item["$ref"].rsplit("/", 1)[1] for item in ok["application/json"]["schema"]["anyOf"]]
    assert answers == ["PagePrediction", "DocumentPrediction"]
    assert {"application/xml", "application/pdf", "application/xhtml+xml"} <= set(ok)
    assert {"400", "413", "415", "422", "503"} <= set(operation["responses"])
    page = schema["components"]["schemas"]["PagePrediction"]
    assert {"lines", "text", "width", "height", "model_version", "elapsed_ms"} <= set(page["properties"])
    assert {"polygon", "baseline", "words", "error"} <= set(schema["components"]["schemas"]["PageLine"]["properties"])
