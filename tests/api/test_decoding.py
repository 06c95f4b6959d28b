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
