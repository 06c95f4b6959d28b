"""Against a real ``uvicorn api.app:app`` process on a loopback port: startup, streaming body
limit, 200 concurrent requests from 16 clients, and resident memory over 1,000 requests."""

from __future__ import annotations

import base64
import json
import select
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from api.app import create_app  # noqa: F401  (import check: the module imports without a model)
from tests.api.conftest import SERVER_ENV, Server


def test_health_and_predict(server, lines):
    health = httpx.get(server.url + "/health", timeout=10).json()
    assert health["status"] == "ok"
    path, text = lines[4]
    r = httpx.post(server.url + "/v1/predict", files={"file": (path.name, path.read_bytes(), "image/png")}, timeout=30)
    assert r.status_code == 200 and r.json()["text"] == text
    r = httpx.post(server.url + "/v1/predict", json={"image": base64.b64encode(path.read_bytes()).decode()}, timeout=30)
    assert r.status_code == 200 and r.json()["text"] == text
    assert "text_recognizer_inference_seconds_count" in httpx.get(server.url + "/metrics", timeout=10).text


def _raw_request(port: int, head: bytes, chunks, pause: float = 0.0) -> tuple[int, bytes]:
    """Send ``head`` then body ``chunks`` until the server answers; return (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        for chunk in chunks:
            if select.select([sock], [], [], pause)[0]:
                break  # the server has answered (and stopped reading)
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        data = b""
        sock.settimeout(30)
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _length(data):
            part = sock.recv(65536)
            if not part:
                break
            data += part
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def test_streamed_body_over_limit_is_cut_off(server):
    """No Content-Length (chunked): the limit is enforced on the bytes as they arrive."""
    head = (
        b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"\0" * 65536
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    first = b'--B\r\nContent-Disposition: form-data; name="file"; filename="x.png"\r\nContent-Type: image/png\r\n\r\n'
    chunks = [b"%x\r\n" % len(first) + first + b"\r\n"] + [chunk] * 200  # 12.5 MiB offered, limit 2 MiB
    status, body = _raw_request(server.port, head, chunks, pause=0.002)
    assert status == 413
    assert json.loads(body)["error"] == "body_too_large"
    assert httpx.get(server.url + "/health", timeout=10).status_code == 200


def test_declared_length_over_limit_is_refused_before_reading(server):
    head = b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n"
    status, body = _raw_request(server.port, head, [b"{" + b" " * 1000] * 3, pause=0.05)
    assert status == 413
    assert "50000000" in json.loads(body)["detail"]


@pytest.mark.slow
def test_200_concurrent_requests_from_16_clients(server, lines):
    payloads = [(p.read_bytes(), t) for p, t in lines]

    def client_worker(worker: int) -> list[str]:
        problems = []
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for i in range(worker, 200, 16):
                data, text = payloads[i % len(payloads)]
                if i % 5 == 0:
                    r = http.post("/v1/predict/batch", files=[("files", data), ("files", payloads[0][0])])
                    ok = r.status_code == 200 and [x["prediction"]["text"] for x in r.json()["results"]] == [
                        text,
                        payloads[0][1],
                    ]
                elif i % 3 == 0:
                    r = http.post("/v1/predict", json={"image": base64.b64encode(data).decode()})
                    ok = r.status_code == 200 and r.json()["text"] == text
                else:
                    r = http.post("/v1/predict", files={"file": ("l.png", data, "image/png")})
                    ok = r.status_code == 200 and r.json()["text"] == text
                if not ok:
                    problems.append(f"request {i}: {r.status_code} {r.text[:200]}")
        return problems

    with ThreadPoolExecutor(16) as pool:
        problems = [p for result in pool.map(client_worker, range(16)) for p in result]
    assert problems == []
    assert server.process.poll() is None


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to read resident memory")
def test_memory_does_not_grow_over_1000_requests(server, lines):
    good = [p.read_bytes() for p, _ in lines]
    bad = [b"", b"garbage" * 20, good[0][:300]]

    def run(count: int, offset: int) -> None:
        def one(i: int) -> int:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                codes = []
                for j in range(i, count, 4):
                    k = offset + j
                    if k % 10 == 9:
                        codes.append(
                            http.post("/v1/predict", files={"file": ("b.png", bad[k % 3], "image/png")}).status_code
                        )
                    elif k % 10 == 4:
                        codes.append(
                            http.post(
                                "/v1/predict/batch", files=[("files", good[k % 8]), ("files", good[(k + 1) % 8])]
                            ).status_code
                        )
                    else:
                        codes.append(
                            http.post("/v1/predict", files={"file": ("g.png", good[k % 8], "image/png")}).status_code
                        )
                assert all(c in (200, 400) for c in codes), codes
                return len(codes)

        with ThreadPoolExecutor(4) as pool:
            assert sum(pool.map(one, range(4))) == count

    run(150, 0)  # warm-up: allocator pools, multipart temp buffers, metrics label sets
    samples = [_rss_kib(server.pid)]
    for block in range(4):
        run(250, 150 + 250 * block)
        samples.append(_rss_kib(server.pid))
    growth_mib = (samples[-1] - samples[0]) / 1024
    late_growth_mib = (samples[-1] - samples[2]) / 1024
    assert growth_mib < 24, f"RSS grew {growth_mib:.1f} MiB over 1,000 requests: {samples} KiB"
    assert late_growth_mib < 8, f"RSS still growing in the second half: {samples} KiB"


def test_startup_fails_clearly_without_checkpoint(tmp_path):
    srv = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": str(tmp_path / "missing.pt")})
    try:
        assert srv.process.wait(timeout=60) != 0
        log = srv.log()
    finally:
        srv.stop()
    assert "cannot load the model (TEXT_RECOGNIZER_CHECKPOINT)" in log and "missing.pt does not exist" in log
    assert "text recognizer API startup failed" in log


def test_startup_fails_clearly_on_corrupt_checkpoint(tmp_path):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"PK\x03\x04 definitely not a checkpoint" * 10)
    srv = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": str(corrupt)})
    try:
        assert srv.process.wait(timeout=60) != 0
        log = srv.log()
    finally:
        srv.stop()
    assert "corrupt.pt could not be read" in log


def test_startup_without_bundled_model_says_how_to_train(tmp_path):
    from text_recognizer.recognizer import DEFAULT_CHECKPOINT

    if DEFAULT_CHECKPOINT.is_file():
        pytest.skip("a bundled default model exists now")
    srv = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": ""})
    try:
        assert srv.process.wait(timeout=60) != 0
        log = srv.log()
    finally:
        srv.stop()
    assert "no bundled model" in log and "run_experiment.py" in log


def test_event_loop_stays_free_during_inference(server, lines):
    """/health answers while a large batch is being decoded in the worker pool."""
    data = [("files", p.read_bytes()) for p, _ in lines] * 1
    with ThreadPoolExecutor(3) as pool:
        batches = [pool.submit(httpx.post, server.url + "/v1/predict/batch", files=data, timeout=60) for _ in range(2)]
        time.sleep(0.02)
        start = time.perf_counter()
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200
        health_s = time.perf_counter() - start
        assert all(b.result().status_code == 200 and b.result().json()["results"][0]["error"] is None for b in batches)
    assert health_s < 2.0
