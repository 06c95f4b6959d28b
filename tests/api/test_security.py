"""Access control against real uvicorn processes: API keys (file and environment, Bearer and
X-API-Key), health routes open, a per-key rate limit with 429 + Retry-After that recovers, and
CORS origins (none unless configured)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.api.conftest import SERVER_ENV, Server


@pytest.fixture(scope="module")
def locked(tiny_checkpoint, tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys") / "api_keys.txt"
    keys.write_text("# one key per line\nkey-alpha\n\nkey-bravo\n")
    srv = Server(
        {
            **SERVER_ENV,
            "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint),
            "TEXT_RECOGNIZER_API_KEYS_FILE": str(keys),
            "TEXT_RECOGNIZER_API_KEYS": "key-charlie",
            "TEXT_RECOGNIZER_RATE_LIMIT": "3 per 2 seconds",
            "TEXT_RECOGNIZER_CORS_ORIGINS": "https://app.example",
        }
    )
    try:
        srv.wait_healthy()
        yield srv
    finally:
        srv.stop()


def _post(url: str, line: bytes, headers: dict | None = None) -> httpx.Response:
    return httpx.post(url + "/v1/predict", files={"file": ("l.png", line, "image/png")}, headers=headers, timeout=30)


@pytest.mark.parametrize(
    "headers, status",
    [
        ({}, 401),
        ({"X-API-Key": "wrong"}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic a2V5LWFscGhhOg=="}, 401),
        ({"X-API-Key": "key-alpha"}, 200),
        ({"Authorization": "Bearer key-alpha"}, 200),
    ],
)
def test_key_matrix(locked, lines, headers, status):
    response = _post(locked.url, lines[0][0].read_bytes(), headers)
    assert response.status_code == status, response.text
    if status == 401:
        assert response.json()["error"] == "unauthorized" and response.headers["www-authenticate"] == "Bearer"
    else:
        assert response.json()["text"] == lines[0][1]


def test_keys_from_the_environment_and_the_batch_route(locked, lines):
    files = [("files", ("a.png", lines[1][0].read_bytes(), "image/png"))]
    assert httpx.post(locked.url + "/v1/predict/batch", files=files, timeout=30).status_code == 401
    r = httpx.post(locked.url + "/v1/predict/batch", files=files, headers={"X-API-Key": "key-charlie"}, timeout=30)
    assert r.status_code == 200 and r.json()["results"][0]["prediction"]["text"] == lines[1][1]


def test_health_model_info_and_page_stay_open(locked):
    for path in ("/health", "/health/ready", "/v1/model", "/", "/openapi.json"):
        assert httpx.get(locked.url + path, timeout=10).status_code == 200, path


def test_openapi_declares_the_key_schemes(locked):
    schema = httpx.get(locked.url + "/openapi.json", timeout=10).json()
    assert {"HTTPBearer", "APIKeyHeader"} <= set(schema["components"]["securitySchemes"])
    assert schema["paths"]["/v1/predict"]["post"]["security"]
    assert "security" not in schema["paths"]["/health"]["get"]


def test_rate_limit_429_then_recovers(locked, lines):
    line = lines[2][0].read_bytes()
    bravo = {"X-API-Key": "key-bravo"}
    codes = [_post(locked.url, line, bravo).status_code for _ in range(4)]
    assert codes[:3] == [200, 200, 200] and codes[3] == 429, codes
    limited = _post(locked.url, line, bravo)
    assert limited.status_code == 429 and limited.json()["error"] == "rate_limited"
    retry = int(limited.headers["retry-after"])
    assert 1 <= retry <= 2
    assert _post(locked.url, line, {"X-API-Key": "key-charlie"}).status_code == 200  # other keys are not limited
    time.sleep(retry + 0.2)
    assert _post(locked.url, line, bravo).status_code == 200


def test_cors_allows_only_the_configured_origin(locked, server):
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key"}
    ok = httpx.options(locked.url + "/v1/predict", headers={"Origin": "https://app.example", **preflight}, timeout=10)
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
    other = httpx.options(
        locked.url + "/v1/predict", headers={"Origin": "https://evil.example", **preflight}, timeout=10
    )
    assert "access-control-allow-origin" not in other.headers
    default = httpx.get(server.url + "/health", headers={"Origin": "https://app.example"}, timeout=10)
    assert "access-control-allow-origin" not in default.headers  # no origins by default


def test_open_server_needs_no_key(server, lines):
    assert _post(server.url, lines[0][0].read_bytes()).status_code == 200


def test_unreadable_key_file_stops_startup(tiny_checkpoint, tmp_path):
    srv = Server(
        {
            **SERVER_ENV,
            "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint),
            "TEXT_RECOGNIZER_API_KEYS_FILE": str(tmp_path / "missing.txt"),
        }
    )
    try:
        assert srv.process.wait(timeout=60) != 0
        log = srv.log()
    finally:
        srv.stop()
    assert "TEXT_RECOGNIZER_API_KEYS_FILE" in log and "missing.txt" in log
