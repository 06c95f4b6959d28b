"""The API through Starlette's TestClient: health, model info, predictions, base64, batch, OpenAPI, page, metrics."""

from __future__ import annotations

import base64

import pytest

from api.app import STATIC


def test_health(client):
    r = client.get("/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["model_loaded"] is True
    assert body["model_version"].startswith("best-")
    ready = client.get("/health/ready")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert ready.json()["model_version"] == body["model_version"]


def test_model_info(client, tiny_checkpoint):
    info = client.get("/v1/model").json()
    assert info["checkpoint"] == tiny_checkpoint.name
    assert info["input_height"] == 32 and info["kind"] == "crnn"
    assert "a" in info["charset"] and info["num_classes"] == len(info["charset"]) + 1
    assert info["val_cer"] == 0.0
    assert "tests/fixtures/lines" in info["training_data"]
    assert len(info["sha256"]) == 64 and info["model_version"].endswith(info["sha256"][:12])
    assert info["model_card"] is None and info["licence"] is None  # a training checkpoint: no card, no licence


def test_predict_every_fixture_line(client, lines):
    for path, text in lines:
        r = client.post("/v1/predict", files={"file": (path.name, path.read_bytes(), "image/png")})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["text"] == text
        assert 0.0 <= body["confidence"] <= 1.0
        assert (body["image_width"], body["image_height"]) == (384, 64)
        for key in ("elapsed_ms", "inference_ms", "preprocess_ms", "queue_ms"):
            assert body[key] >= 0.0
        assert body["elapsed_ms"] >= body["inference_ms"]
        assert body["model_version"] == client.get("/health").json()["model_version"]


@pytest.mark.parametrize("form", ["plain", "data_url", "wrapped"])
def test_predict_base64(client, lines, form):
    path, text = lines[1]
    encoded = base64.b64encode(path.read_bytes()).decode()
    if form == "data_url":
        encoded = "data:image/png;base64," + encoded
    elif form == "wrapped":
        encoded = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    r = client.post("/v1/predict", json={"image": encoded})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == text


def test_predict_raw_image_body(client, lines):
    path, text = lines[2]
    r = client.post("/v1/predict", content=path.read_bytes(), headers={"content-type": "image/png"})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == text


def test_batch_keeps_request_order(client, lines):
    order = [3, 0, 7, 5, 1, 3]  # mixed widths and a repeat
    files = [("files", (lines[i][0].name, lines[i][0].read_bytes(), "image/png")) for i in order]
    r = client.post("/v1/predict/batch", files=files)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["prediction"]["text"] for x in results] == [lines[i][1] for i in order]
    assert [x["index"] for x in results] == list(range(len(order)))
    assert [x["filename"] for x in results] == [lines[i][0].name for i in order]
    assert results[0]["prediction"] == results[-1]["prediction"] and results[0]["error"] is None


def test_batch_base64(client, lines):
    images = [base64.b64encode(p.read_bytes()).decode() for p, _ in lines[:3]]
    r = client.post("/v1/predict/batch", json={"images": images})
    assert r.status_code == 200, r.text
    assert [x["prediction"]["text"] for x in r.json()["results"]] == [t for _, t in lines[:3]]


def test_batch_matches_single(client, lines):
    single = [client.post("/v1/predict", files={"file": p.read_bytes()}).json() for p, _ in lines[:4]]
    response = client.post("/v1/predict/batch", files=[("files", p.read_bytes()) for p, _ in lines[:4]])
    batch = [item["prediction"] for item in response.json()["results"]]
    for s, b in zip(single, batch):  # equal widths: no padding, so the BiLSTM sees the same input
        assert s["text"] == b["text"]
        assert s["confidence"] == pytest.approx(b["confidence"], abs=1e-4)


def test_openapi_schema(client):
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    assert {"/health", "/health/ready", "/v1/model", "/v1/predict", "/v1/predict/batch"} <= set(paths)
    predict = paths["/v1/predict"]["post"]
    assert {"multipart/form-data", "application/json"} <= set(predict["requestBody"]["content"])
    assert "file" in predict["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert {"200", "400", "413", "415", "422", "429", "503"} <= set(predict["responses"])
    assert predict["responses"]["413"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert predict["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Prediction")
    batch = paths["/v1/predict/batch"]["post"]
    assert "files" in batch["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert "400" not in batch["responses"], "a bad image is a per-item error in a batch, not a 400"
    example = schema["components"]["schemas"]["BatchPrediction"]["examples"][0]["results"]
    assert example[0]["prediction"]["text"] and example[1]["error"]["code"] == "corrupt_image"
    json_body = batch["requestBody"]["content"]["application/json"]["schema"]
    assert "$ref" not in str(json_body) and json_body["examples"][0]["images"][1]["id"] == "page3-line7"
    components = schema["components"]["schemas"]
    for name in (
        "Prediction",
        "BatchPrediction",
        "BatchItem",
        "ItemError",
        "ModelInfo",
        "Health",
        "Readiness",
        "ErrorResponse",
    ):
        assert name in components
    required = set(components["Prediction"]["required"])
    assert {"text", "confidence", "model_version", "image_width", "image_height", "elapsed_ms"} <= required
    assert client.get("/docs").status_code == 200


def test_docs_page_needs_no_cdn(client):
    """Swagger UI is served from local files: the page references nothing outside this server."""
    page = client.get("/docs").text
    assert "/openapi.json" in page and "cdn" not in page.lower() and "https://" not in page.split("<body>")[1]
    for asset in ("/static/swagger/swagger-ui-bundle.js", "/static/swagger/swagger-ui.css"):
        assert asset in page
        response = client.get(asset)
        assert response.status_code == 200 and len(response.content) > 10_000


def test_page_and_static_files(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in r.headers["content-security-policy"]
    assert "/static/app.js" in r.text
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    for path in STATIC.iterdir():  # no external resources: nothing outside this machine is reachable
        text = path.read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, path


def test_metrics(client, lines):
    client.post("/v1/predict", files={"file": lines[0][0].read_bytes()})
    client.post("/v1/predict", content=b"nope", headers={"content-type": "image/png"})
    text = client.get("/metrics").text
    assert 'text_recognizer_http_requests_total{method="POST",route="/v1/predict",status="200"}' in text
    assert 'text_recognizer_rejected_inputs_total{code="not_an_image"}' in text
    assert "text_recognizer_inference_seconds_bucket" in text
    assert "text_recognizer_http_request_duration_seconds_bucket" in text
