"""Decoder choice through the API: the ?decoder= option, the server default, words and positions in responses."""

from __future__ import annotations

import pytest

from api.settings import Settings


def test_predict_with_beam_returns_words_with_positions(client, lines):
    path, text = lines[0]
    r = client.post("/v1/predict?decoder=beam", files={"file": (path.name, path.read_bytes(), "image/png")})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"]
    assert [w["text"] for w in body["words"]] == body["text"].split()
    for span in (*body["words"], *body["chars"]):
        assert set(span) == {"text", "confidence", "start", "end"}
        assert 0 <= span["start"] < span["end"] <= body["image_width"] and 0 <= span["confidence"] <= 1
    default = client.post("/v1/predict", files={"file": (path.name, path.read_bytes(), "image/png")}).json()
    assert default["words"] and default["chars"]


def test_batch_with_beam(client, lines):
    files = [("files", (p.name, p.read_bytes(), "image/png")) for p, _ in lines[:2]]
    body = client.post("/v1/predict/batch?decoder=beam", files=files).json()
    assert all(result["prediction"]["words"] for result in body["results"])


def test_unknown_decoder_is_a_client_error(client, lines):
    path, _ = lines[0]
    r = client.post("/v1/predict?decoder=viterbi", files={"file": (path.name, path.read_bytes(), "image/png")})
    assert r.status_code == 422 and r.json()["error"] == "unknown_decoder" and "viterbi" in r.json()["detail"]


def test_decoder_setting():
    assert Settings.from_env({"TEXT_RECOGNIZER_DECODER": "beam"}).decoder == "beam"
    assert Settings.from_env({}).decoder == "greedy"
    with pytest.raises(ValueError, match="TEXT_RECOGNIZER_DECODER"):
        Settings(decoder="viterbi")


def test_openapi_documents_the_decoder_and_spans(client):
    schema = client.get("/openapi.json").json()
    params = schema["paths"]["/v1/predict"]["post"]["parameters"]
    assert any(p["name"] == "decoder" for p in params)
    assert {"start", "end", "confidence", "text"} <= set(schema["components"]["schemas"]["Word"]["properties"])
    assert "chars" in schema["components"]["schemas"]["Prediction"]["properties"]


def _bundled_client(checkpoint=None):
    from fastapi.testclient import TestClient

    from api.app import create_app

    return TestClient(create_app(Settings(checkpoint=checkpoint, access_log=False, workers=1)),
                      raise_server_exceptions=False)


def test_readings_per_request_with_the_bundled_model(lines):
    """?readings=3 reads as LineRecognizer(readings=3) does; a bad value is a 422 that says what is allowed."""
    from tests.api.conftest import wait_ready
    from text_recognizer.recognizer import LineRecognizer

    path, _ = lines[0]
    files = {"file": (path.name, path.read_bytes(), "image/png")}
    with _bundled_client() as client:
        wait_ready(client.get)
        for decoder in ("greedy", "beam"):
            r = client.post(f"/v1/predict?decoder={decoder}&readings=3", files=files)
            assert r.status_code == 200, r.text
            expected = LineRecognizer(decoder=decoder, readings=3).predict_lines([path])[0]
            assert r.json()["text"] == expected.text
            assert abs(r.json()["confidence"] - expected.confidence) < 1e-4
        once = client.post("/v1/predict?decoder=beam&readings=1", files=files).json()
        assert once["confidence"] != r.json()["confidence"]  # the second settings and calibration were used
        batch = client.post("/v1/predict/batch?readings=3", files=[("files", files["file"])])
        assert batch.status_code == 200 and batch.json()["results"][0]["prediction"]["text"]
        bad = client.post("/v1/predict?readings=2", files=files)
        assert bad.status_code == 422 and bad.json()["error"] == "bad_readings" and "1 or 3" in bad.json()["detail"]


def test_three_readings_without_settings_for_them_are_refused(lines, tmp_path):
    """A model whose decoder bundle was tuned for one reading only: ?readings=3 is a 422, one reading still works."""
    from tests.api.conftest import wait_ready
    from text_recognizer.decoding.bundle import load_bundle, save_bundle
    from text_recognizer.decoding.readings import SECTION
    from text_recognizer.recognizer import DEFAULT_CHECKPOINT

    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(DEFAULT_CHECKPOINT.read_bytes())
    bundle = load_bundle(DEFAULT_CHECKPOINT.with_suffix(".decoder.pt"))
    save_bundle({k: v for k, v in bundle.items() if k != SECTION}, tmp_path / "model.decoder.pt")
    path, _ = lines[0]
    files = {"file": (path.name, path.read_bytes(), "image/png")}
    with _bundled_client(checkpoint) as client:
        wait_ready(client.get)
        r = client.post("/v1/predict?readings=3", files=files)
        assert r.status_code == 422 and r.json()["error"] == "readings_unavailable"
        assert client.post("/v1/predict?readings=1", files=files).status_code == 200


def test_openapi_documents_readings(client):
    params = client.get("/openapi.json").json()["paths"]["/v1/predict/batch"]["post"]["parameters"]
    assert any(p["name"] == "readings" and "three" in p["description"] for p in params)
