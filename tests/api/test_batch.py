"""Per-item batch results: one result per image, in order, named by file name or id, each either a
prediction or an error; 200 whenever the request itself is well formed (TestClient)."""

from __future__ import annotations

import base64
import io

from PIL import Image


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_good_corrupt_and_too_large_images_get_their_own_results(client, lines):
    good = lines[2][0].read_bytes()
    files = [
        ("files", ("first.png", good, "image/png")),
        ("files", ("corrupt.png", good[: len(good) // 2], "image/png")),
        ("files", ("huge.png", _png(Image.new("L", (8_001, 40), 255)), "image/png")),
        ("files", ("text.png", b"just some words", "image/png")),
        ("files", ("last.png", lines[5][0].read_bytes(), "image/png")),
    ]
    response = client.post("/v1/predict/batch", files=files)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert [r["filename"] for r in results] == ["first.png", "corrupt.png", "huge.png", "text.png", "last.png"]
    assert results[0]["prediction"]["text"] == lines[2][1] and results[0]["error"] is None
    assert results[4]["prediction"]["text"] == lines[5][1] and results[4]["error"] is None
    expected = {1: ("corrupt_image", 400), 2: ("image_too_large", 413), 3: ("not_an_image", 400)}
    for index, (code, status) in expected.items():
        item = results[index]
        assert item["prediction"] is None
        assert (item["error"]["code"], item["error"]["status"]) == (code, status)
        assert files[index][1][0] in item["error"]["detail"]


def test_a_batch_of_only_bad_images_is_still_200(client):
    response = client.post("/v1/predict/batch", files=[("files", ("a.png", b"", "image/png"))])
    assert response.status_code == 200
    assert response.json()["results"][0]["error"]["code"] == "empty_file"


def test_json_ids_are_echoed_and_plain_strings_mixed_in(client, lines):
    encoded = base64.b64encode(lines[0][0].read_bytes()).decode()
    body = {
        "images": [
            {"id": "page1-line1", "image": encoded},
            encoded,
            {"id": "bad-one", "image": "%%% not base64"},
            {"id": "url", "image": "https://example.org/x.png"},
        ]
    }
    response = client.post("/v1/predict/batch", json=body)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["id"] for r in results] == ["page1-line1", None, "bad-one", "url"]
    assert [r["filename"] for r in results] == [None] * 4
    assert results[0]["prediction"]["text"] == results[1]["prediction"]["text"] == lines[0][1]
    assert results[2]["error"]["code"] == "invalid_base64" and "bad-one" in results[2]["error"]["detail"]
    assert results[3]["error"]["code"] == "url_not_supported"


def test_text_value_instead_of_file_is_an_item_error(client, lines):
    response = client.post(
        "/v1/predict/batch",
        data={"files": "hello"},
        files=[("files", ("a.png", lines[1][0].read_bytes(), "image/png"))],
    )
    assert response.status_code == 200, response.text
    codes = sorted((r["error"] or {}).get("code", "ok") for r in response.json()["results"])
    assert codes == ["not_a_file", "ok"]


def test_malformed_requests_still_fail_as_a_whole(client, lines):
    assert client.post("/v1/predict/batch", json={"images": [12]}).json()["error"] == "missing_field"
    assert client.post("/v1/predict/batch", json={"images": [{"image": "abc"}]}).status_code == 422  # no id
    assert client.post("/v1/predict/batch", content=b"x", headers={"content-type": "text/plain"}).status_code == 415


def _rejected(client, code: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f'text_recognizer_rejected_inputs_total{{code="{code}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_item_errors_are_counted_once_in_metrics(client):
    before = _rejected(client, "empty_file")
    client.post("/v1/predict/batch", files=[("files", ("x.png", b"", "image/png"))] * 2)
    client.post("/v1/predict", files={"file": ("x.png", b"", "image/png")})
    assert _rejected(client, "empty_file") == before + 3
