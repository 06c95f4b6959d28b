"""``?language=`` on the line, batch and page routes, against a real uvicorn server serving a model with an English
and a French decoder bundle: the language whose models read is in every answer, auto picks one per line (one
per page), a language without a bundle or one the model cannot write is a 422 naming what it reads (never a 500),
a language the model lacks is refused by every decoder, ``/v1/model`` lists the languages, and the OpenAPI schema
documents the parameter.
The model is untrained: its texts are noise, the languages are what is checked."""

from __future__ import annotations

import httpx
import pytest

from tests.api.conftest import FIXTURES, SERVER_ENV, Server, wait_ready
from tests.api.test_page_route import encoded
from tests.decoding.bilingual import IAM, bilingual_model, bundle_for
from tests.segmentation.test_classical import compose_page
from tests.test_page_formats import assert_valid, page_schema
from text_recognizer.decoding.bundle import bundle_path, save_bundle

LINE = FIXTURES / "line_00.png"


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory):
    model = bilingual_model(tmp_path_factory.mktemp("bilingual"))
    srv = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": str(model), "TEXT_RECOGNIZER_WORKERS": "1"})
    try:
        srv.wait_healthy()
        yield srv
    finally:
        srv.stop()


def post(server, route: str = "/v1/predict", files=None, **params) -> httpx.Response:
    files = files or {"file": (LINE.name, LINE.read_bytes(), "image/png")}
    return httpx.post(server.url + route, files=files, params=params, timeout=120)


def refused(response: httpx.Response, code: str, *words: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == code, body
    for word in words:
        assert word in body["detail"], body["detail"]


def test_the_model_lists_its_languages(bilingual):
    info = httpx.get(bilingual.url + "/v1/model", timeout=30).json()
    assert info["languages"] == ["en", "fr"] and info["language"] == "en"  # the model's own; auto when asked


def test_lines_say_which_language_read_them(bilingual):
    for language in ("en", "fr"):
        response = post(bilingual, decoder="beam", language=language)
        assert response.status_code == 200, response.text
        assert response.json()["language"] == language
    assert post(bilingual, decoder="beam").json()["language"] == "en"  # the model's own language by default
    assert post(bilingual, decoder="beam", language="auto").json()["language"] in ("en", "fr")
    greedy = post(bilingual, language="fr")  # greedy reads alike in every language the model has
    assert greedy.status_code == 200 and greedy.json()["language"] is None


def test_a_batch_in_french(bilingual):
    files = [("files", (p.name, p.read_bytes(), "image/png")) for p in sorted(FIXTURES.glob("line_0[0-2].png"))]
    response = post(bilingual, "/v1/predict/batch", files=files, decoder="beam", language="fr")
    assert response.status_code == 200, response.text
    assert [item["prediction"]["language"] for item in response.json()["results"]] == ["fr"] * 3


def test_languages_the_model_cannot_read_are_client_errors(bilingual):
    for decoder in ("greedy", "beam"):  # refused alike by every decoder
        refused(post(bilingual, decoder=decoder, language="de"), "language_unavailable", "German (de)",
                "English (en), French (fr)")
    refused(post(bilingual, language="french"), "bad_language", "ISO 639-1", "'french'")
    refused(post(bilingual, decoder="beam", language="fr", readings="3"), "readings_unavailable")
    files = [("files", (LINE.name, LINE.read_bytes(), "image/png"))]
    refused(post(bilingual, "/v1/predict/batch", files=files, decoder="beam", language="de"), "language_unavailable")


def test_a_page_in_one_language(bilingual):
    page, _ = compose_page(["line_00.png", "line_01.png", "line_02.png"])
    files = {"file": ("letter.png", encoded(page), "image/png")}
    response = post(bilingual, "/v1/predict/page", files=files, decoder="beam", language="fr")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["lines"] and body["language"] == "fr" and {line["language"] for line in body["lines"]} == {"fr"}
    auto = post(bilingual, "/v1/predict/page", files=files, decoder="beam").json()
    assert auto["language"] in ("en", "fr") and {line["language"] for line in auto["lines"]} == {auto["language"]}
    xml = post(bilingual, "/v1/predict/page", files=files, decoder="beam", language="fr", format="page")
    assert xml.status_code == 200 and b'primaryLanguage="French"' in xml.content
    assert_valid(page_schema(), xml.content)
    refused(post(bilingual, "/v1/predict/page", files=files, decoder="beam", language="de"), "language_unavailable",
            "German")


def test_openapi_documents_the_language(bilingual):
    schema = httpx.get(bilingual.url + "/openapi.json", timeout=30).json()
    for route in ("/v1/predict", "/v1/predict/batch", "/v1/predict/page"):
        parameters = {p["name"]: p for p in schema["paths"][route]["post"]["parameters"]}
        assert "auto" in parameters["language"]["description"] and "beam" in parameters["language"]["description"]
    for name in ("LinePrediction", "PagePrediction", "PageLine"):
        assert "language" in schema["components"]["schemas"][name]["properties"]
    assert {"languages", "language"} <= set(schema["components"]["schemas"]["ModelInfo"]["properties"])


def test_the_server_language_setting(tmp_path):
    from api.serving import StartupError, load_serving
    from api.settings import Settings

    assert Settings.from_env({"TEXT_RECOGNIZER_LANGUAGE": " FR"}).language == "fr"
    assert Settings.from_env({}).language is None
    with pytest.raises(ValueError, match="TEXT_RECOGNIZER_LANGUAGE"):
        Settings.from_env({"TEXT_RECOGNIZER_LANGUAGE": "french"})
    model = bilingual_model(tmp_path, languages=("en",))
    with pytest.raises(StartupError, match=r"TEXT_RECOGNIZER_LANGUAGE=fr: .*no decoder bundle for French"):
        load_serving(Settings(checkpoint=model, language="fr", access_log=False, workers=1))
    serving = load_serving(Settings(checkpoint=model, language="en", access_log=False, workers=1))
    assert serving.recognizer.language == "en"


def test_a_model_that_cannot_write_french_says_so(tmp_path):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings

    old = bilingual_model(tmp_path, IAM, ("en",))
    save_bundle(bundle_for("fr"), bundle_path(old, "fr"))
    with TestClient(create_app(Settings(checkpoint=old, access_log=False, workers=1)),
                    raise_server_exceptions=False) as client:
        wait_ready(client.get)
        assert client.get("/v1/model").json()["languages"] == ["en"]
        files = {"file": (LINE.name, LINE.read_bytes(), "image/png")}
        response = client.post("/v1/predict?decoder=beam&language=fr", files=files)
        refused(response, "language_unavailable", "cannot write French (fr)", "English (en)")
        assert client.post("/v1/predict?decoder=beam", files=files).json()["language"] == "en"


def test_three_readings_need_the_settings_in_the_language_asked_for(tmp_path):
    """TEXT_RECOGNIZER_READINGS=3 with settings for three readings in the English bundle only: French beam requests
    are a 422 saying so, not a 500 from the worker."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings
    from text_recognizer.decoding.readings import SECTION

    model = bilingual_model(tmp_path)
    three = {"shift": 2, "beam": {}, "calibration": {}}
    save_bundle({**bundle_for("en"), SECTION: three}, bundle_path(model))
    with TestClient(create_app(Settings(checkpoint=model, readings=3, access_log=False, workers=1)),
                    raise_server_exceptions=False) as client:
        wait_ready(client.get)
        files = {"file": (LINE.name, LINE.read_bytes(), "image/png")}
        assert client.post("/v1/predict?decoder=beam&language=en", files=files).json()["language"] == "en"
        refused(client.post("/v1/predict?decoder=beam&language=fr", files=files), "readings_unavailable", "'fr'")
        refused(client.post("/v1/predict?decoder=beam&language=auto", files=files), "readings_unavailable")  # all
        assert client.post("/v1/predict?decoder=beam", files=files).json()["language"] == "en"  # the default
        assert client.post("/v1/predict?decoder=beam&language=fr&readings=1", files=files).json()["language"] == "fr"
