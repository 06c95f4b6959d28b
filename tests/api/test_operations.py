"""Operations against real uvicorn processes: request ids, JSON access logs, readiness apart from
liveness during a slow model load, graceful shutdown on SIGTERM during a request, and serving
with two worker processes that each load the model once."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import ROOT, SERVER_ENV, Server


def _access_lines(server: Server) -> list[dict]:
    out = []
    for line in server.log().splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def test_request_id_is_echoed_generated_and_logged(server, lines):
    data = lines[3][0].read_bytes()
    mine = httpx.post(
        server.url + "/v1/predict",
        files={"file": ("l.png", data, "image/png")},
        headers={"X-Request-ID": "client-42.a"},
        timeout=30,
    )
    assert mine.status_code == 200 and mine.headers["x-request-id"] == "client-42.a"
    made = httpx.get(server.url + "/health", timeout=10).headers["x-request-id"]
    assert len(made) == 32 and int(made, 16) >= 0
    odd = httpx.get(server.url + "/health", headers={"X-Request-ID": "has spaces " + "x" * 200}, timeout=10)
    assert " " not in odd.headers["x-request-id"] and len(odd.headers["x-request-id"]) == 32
    bad = httpx.post(
        server.url + "/v1/predict",
        content=b"nope",
        headers={"content-type": "image/png", "X-Request-ID": "bad-1"},
        timeout=10,
    )
    assert bad.status_code == 400 and bad.headers["x-request-id"] == "bad-1"
    time.sleep(0.2)
    records = {r["request_id"]: r for r in _access_lines(server)}
    ok = records["client-42.a"]
    assert ok["route"] == "/v1/predict" and ok["status"] == 200 and ok["method"] == "POST"
    assert ok["images"] == ["384x64"] and ok["request_bytes"] > len(data) and ok["latency_ms"] > 0
    assert ok["model_version"].startswith("best-") and ok["pid"] == server.pid
    assert records["bad-1"]["status"] == 400 and records["bad-1"]["images"] == []
    assert records[made]["route"] == "/health"


def test_access_log_never_holds_image_bytes(server, lines):
    data = lines[4][0].read_bytes()
    httpx.post(server.url + "/v1/predict", files={"file": ("l.png", data, "image/png")}, timeout=30)
    time.sleep(0.2)
    log = server.log()
    assert "PNG" not in log and "IHDR" not in log and "iVBOR" not in log


@pytest.fixture
def gated(tiny_checkpoint, tmp_path):
    gate = tmp_path / "go"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        **SERVER_ENV,
        "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint),
        "TEXT_RECOGNIZER_TEST_LOAD_GATE": str(gate),
    }
    srv = Server(env, command=[sys.executable, "-m", "uvicorn", "tests.api.gated_app:app", "--log-level", "warning"])
    try:
        yield srv, gate
    finally:
        srv.stop()


def test_ready_only_after_the_model_is_loaded(gated, lines):
    srv, gate = gated
    srv.wait_healthy(path="/health")  # alive while the model waits at the gate
    ready = httpx.get(srv.url + "/health/ready", timeout=10)
    assert ready.status_code == 503 and ready.json()["ready"] is False and ready.headers["retry-after"] == "1"
    assert httpx.get(srv.url + "/health", timeout=10).json()["model_loaded"] is False
    early = httpx.post(srv.url + "/v1/predict", files={"file": ("l.png", lines[0][0].read_bytes())}, timeout=10)
    assert early.status_code == 503 and early.json()["error"] == "model_not_ready"
    assert httpx.get(srv.url + "/v1/model", timeout=10).json()["error"] == "model_not_ready"
    gate.touch()
    srv.wait_healthy()
    assert httpx.get(srv.url + "/health/ready", timeout=10).json()["ready"] is True
    late = httpx.post(srv.url + "/v1/predict", files={"file": ("l.png", lines[0][0].read_bytes())}, timeout=30)
    assert late.status_code == 200 and late.json()["text"] == lines[0][1]


def test_sigterm_during_a_request_still_answers_it(tiny_checkpoint, lines):
    """The client has sent the headers and half the body when the server gets SIGTERM: uvicorn stops
    accepting connections but finishes this request, then exits without cancelling anything."""
    srv = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint)})
    try:
        srv.wait_healthy()
        path, text = lines[6]
        body = (
            b'--B\r\nContent-Disposition: form-data; name="file"; filename="l.png"\r\n'
            b"Content-Type: image/png\r\n\r\n" + path.read_bytes() + b"\r\n--B--\r\n"
        )
        head = (
            f"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
            sock.sendall(head + body[: len(body) // 2])
            time.sleep(0.3)
            srv.process.send_signal(signal.SIGTERM)
            time.sleep(1.0)
            assert srv.process.poll() is None, "the server quit with a request in flight"
            with pytest.raises(httpx.TransportError):  # no new connections once shutting down
                httpx.get(srv.url + "/health", timeout=2)
            sock.sendall(body[len(body) // 2 :])
            answer = b""
            while not answer.endswith(b"}"):
                part = sock.recv(65536)
                if not part:
                    break
                answer += part
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["text"] == text
        # uvicorn re-raises the signal once it has shut down, so the exit status says "terminated by SIGTERM"
        assert srv.process.wait(timeout=30) in (0, -signal.SIGTERM)
        assert "Traceback" not in srv.log() and "cancel" not in srv.log().lower()
    finally:
        srv.stop()


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find the worker processes")
def test_two_worker_processes_each_load_the_model_once(tiny_checkpoint, lines):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        **SERVER_ENV,
        "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint),
        "TEXT_RECOGNIZER_WORKERS": "1",
        "TEXT_RECOGNIZER_TORCH_THREADS": "1",
    }
    srv = Server(env, command=[sys.executable, "-m", "api.serve", "--workers", "2", "--log-level", "warning"])
    try:
        deadline = time.monotonic() + 120
        while len(_loaded(srv)) < 2 and time.monotonic() < deadline:
            assert srv.process.poll() is None, srv.log()
            time.sleep(0.2)
        workers = _loaded(srv)  # (the supervisor has a third child: multiprocessing's resource tracker)
        assert len(set(workers)) == 2 and set(workers) <= set(_children(srv.pid)), (workers, srv.log())
        payloads = [(p.read_bytes(), t) for p, t in lines]

        def one(i: int) -> bool:
            data, text = payloads[i % len(payloads)]
            r = httpx.post(srv.url + "/v1/predict", files={"file": ("l.png", data, "image/png")}, timeout=60)
            return r.status_code == 200 and r.json()["text"] == text

        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(one, range(120)))
        time.sleep(0.3)
        served = {r["pid"] for r in _access_lines(srv) if r.get("route") == "/v1/predict"}
        assert served == set(workers), "both workers should have answered requests"
        assert sorted(_loaded(srv)) == sorted(workers), "a worker loaded the model more than once"
        print("RSS per worker (MiB):", {pid: round(_rss_mib(pid), 1) for pid in workers})
    finally:
        srv.stop()


def _loaded(srv: Server) -> list[int]:
    """Worker pids from the 'serving ... (pid N)' line each logs once its model is loaded."""
    return [
        int(line.rsplit("(pid ", 1)[1].rstrip(")"))
        for line in srv.log().splitlines()
        if "text_recognizer.api: serving " in line
    ]
