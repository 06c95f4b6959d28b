"""``/v1/collections`` against a real uvicorn server with its own data directory and two API keys: pages uploaded
and read, lines corrected and deleted, pages marked done, exports, keys kept apart, bad input refused with 4xx,
and a correction acknowledged before a ``kill -9`` still there after a restart."""

from __future__ import annotations

import io
import signal
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.api.conftest import Server, start_collections_server
from tests.segmentation.test_classical import compose_page

ROUTE = "/v1/collections"
A, B = {"X-API-Key": "key-a"}, {"X-API-Key": "key-b"}


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def page_bytes(lines) -> bytes:
    page, _ = compose_page([path.name for path, _ in lines])
    return png(page)


@pytest.fixture(scope="module")
def server(collections_server):
    return collections_server


def kill_and_restart(server: Server, tiny_checkpoint, data_dir) -> Server:
    """``kill -9`` the server (nothing is flushed or closed), then a new one on the same data directory."""
    try:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
    finally:
        server.stop()
    return start_collections_server(tiny_checkpoint, data_dir)


def call(server, method: str, path: str, headers=A, **kwargs) -> httpx.Response:
    return httpx.request(method, server.url + ROUTE + path, headers=headers, timeout=120, **kwargs)


def refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == code, response.text


def upload(server, collection_id: str, *files: tuple[str, bytes, str], headers=A) -> httpx.Response:
    return call(server, "POST", f"/{collection_id}/pages", headers=headers,
                files=[("files", file) for file in files])


def test_the_correction_loop(server, page_bytes):
    collection = call(server, "POST", "", json={"name": "My letters"})
    assert collection.status_code == 201, collection.text
    cid = collection.json()["id"]
    uploaded = upload(server, cid, ("letter.png", page_bytes, "image/png"))
    assert uploaded.status_code == 201, uploaded.text
    page = uploaded.json()["pages"][0]
    assert uploaded.json()["errors"] == [] and len(page["lines"]) >= 3 and all(line["text"] for line in page["lines"])
    first, second = page["lines"][0], page["lines"][1]
    corrected = call(server, "PUT", f"/{cid}/lines/{first['id']}", json={"text": "Corrected by hand"})
    assert corrected.status_code == 200 and corrected.json()["text"] == "Corrected by hand"
    assert call(server, "DELETE", f"/{cid}/lines/{second['id']}").status_code == 204
    assert call(server, "PATCH", f"/{cid}/pages/{page['id']}", json={"done": True}).json()["done"] is True
    again = call(server, "GET", f"/{cid}/pages/{page['id']}").json()
    assert again["lines"][0]["text"] == "Corrected by hand" and second["id"] not in {x["id"] for x in again["lines"]}
    image = call(server, "GET", f"/{cid}/pages/{page['id']}/image")
    assert image.content == page_bytes and image.headers["content-type"] == "image/png"
    export = call(server, "GET", f"/{cid}/export", params={"format": "labels"})
    assert export.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(export.content)) as archive:
        assert archive.read("lines/labels.tsv").decode().splitlines()[1:] == ["line_00000.png\tCorrected by hand"]
    with zipfile.ZipFile(io.BytesIO(call(server, "GET", f"/{cid}/export", params={"format": "page"}).content)) as z:
        assert b"Corrected by hand" in z.read([n for n in z.namelist() if n.endswith(".xml")][0])
    listed = call(server, "GET", "").json()
    assert [c["id"] for c in listed] == [cid] or cid in [c["id"] for c in listed]


def test_keys_see_only_their_own_collections(server, page_bytes):
    cid = call(server, "POST", "", json={"name": "private"}).json()["id"]
    assert cid not in [c["id"] for c in call(server, "GET", "", headers=B).json()]
    refused(call(server, "GET", f"/{cid}", headers=B), 404, "not_found")
    refused(upload(server, cid, ("p.png", page_bytes, "image/png"), headers=B), 404, "not_found")
    refused(call(server, "GET", "", headers={}), 401, "unauthorized")


def test_bad_input_is_a_clear_client_error(server, page_bytes):
    cid = call(server, "POST", "", json={"name": "bad inputs"}).json()["id"]
    refused(call(server, "POST", "", json={"name": ""}), 422, "validation_error")
    refused(call(server, "GET", "/nope"), 404, "not_found")
    refused(upload(server, cid, ("notes.txt", b"just some text", "text/plain")), 400, "not_an_image")
    refused(upload(server, cid, ("doc.pdf", b"%PDF-1.7\n%%EOF", "application/pdf")), 415, "unsupported_media_type")
    mixed = upload(server, cid, ("bad.png", b"\x89PNG\r\n\x1a\nbroken", "image/png"),
                   ("good.png", page_bytes, "image/png"))
    assert mixed.status_code == 201 and len(mixed.json()["pages"]) == 1 and len(mixed.json()["errors"]) == 1
    page = mixed.json()["pages"][0]
    line = page["lines"][0]["id"]
    refused(call(server, "PUT", f"/{cid}/lines/{line}", json={}), 422, "validation_error")
    refused(call(server, "PUT", f"/{cid}/lines/{line}", json={"text": "x" * 2001}), 422, "validation_error")
    refused(call(server, "PUT", f"/{cid}/lines/nope", json={"text": "x"}), 404, "not_found")
    refused(call(server, "GET", f"/{cid}/export", params={"format": "docx"}), 422, "bad_format")
    assert upload(server, cid, ("again.png", page_bytes, "image/png")).status_code == 201
    refused(upload(server, cid, ("third.png", page_bytes, "image/png")), 409, "limit_reached")  # 2 pages at most


def test_an_acknowledged_correction_survives_kill_9(tiny_checkpoint, tmp_path, page_bytes):
    server = start_collections_server(tiny_checkpoint, tmp_path / "data")
    try:
        cid = call(server, "POST", "", json={"name": "durable"}).json()["id"]
        page = upload(server, cid, ("p.png", page_bytes, "image/png")).json()["pages"][0]
        line = page["lines"][0]["id"]
        assert call(server, "PUT", f"/{cid}/lines/{line}", json={"text": "saved before the crash"}).status_code == 200
    except BaseException:
        server.stop()
        raise
    restarted = kill_and_restart(server, tiny_checkpoint, tmp_path / "data")
    try:
        lines = call(restarted, "GET", f"/{cid}/pages/{page['id']}").json()["lines"]
        assert lines[0]["text"] == "saved before the crash"
    finally:
        restarted.stop()


def corrected_collection(server, page_bytes, name: str) -> tuple[str, int]:
    """A collection of two pages whose every line is corrected (16 lines: enough to adapt on)."""
    cid = call(server, "POST", "", json={"name": name}).json()["id"]
    pages = upload(server, cid, ("a.png", page_bytes, "image/png"), ("b.png", page_bytes, "image/png")).json()
    count = 0
    for page in pages["pages"]:
        for line in page["lines"]:
            assert call(server, "PUT", f"/{cid}/lines/{line['id']}", json={"text": line["text"]}).status_code == 200
            count += 1
    return cid, count


def wait_for(server, cid: str, job: str, states: set[str], timeout: float = 240) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = call(server, "GET", f"/{cid}/jobs/{job}").json()
        if body["state"] in states:
            return body
        time.sleep(1)
    raise AssertionError(f"job {job} not {states} after {timeout} s: {body}")


def test_adapting_in_the_background(server, page_bytes):
    cid, count = corrected_collection(server, page_bytes, "adapt me")
    assert count >= 10
    started = call(server, "POST", f"/{cid}/adapt", json={"minutes": 0.2})
    assert started.status_code == 202, started.text
    job = started.json()
    assert job["state"] == "running" and job["lines"] == count
    other, _ = corrected_collection(server, page_bytes, "second in line")
    refused(call(server, "POST", f"/{other}/adapt", json={"minutes": 0.2}), 409, "job_running")  # one at a time
    done = wait_for(server, cid, job["id"], {"done", "failed"})
    assert done["state"] == "done", done["log"]
    assert done["progress"]["step"] > 0 and done["verdict"]["use"] in ("parent", "fine_tuned")
    assert done["checkpoint"] is None or done["checkpoint"].endswith("best.pt")
    assert [j["id"] for j in call(server, "GET", f"/{cid}/jobs").json()] == [job["id"]]
    reread = call(server, "POST", f"/{cid}/reread", json={"job": job["id"]})
    if done["checkpoint"] is None:  # the tiny parent already reads the fixture lines perfectly: nothing to gain
        refused(reread, 409, "not_adapted")
    else:
        assert reread.status_code == 200 and reread.json()["checkpoint"] == done["checkpoint"]
    refused(call(server, "POST", f"/{cid}/reread", json={"job": "nope"}), 404, "not_found")
    refused(call(server, "GET", f"/{cid}/jobs/{job['id']}", headers=B), 404, "not_found")


def test_a_job_can_be_cancelled_and_needs_corrected_lines(server, page_bytes):
    empty = call(server, "POST", "", json={"name": "nothing corrected"}).json()["id"]
    refused(call(server, "POST", f"/{empty}/adapt", json={"minutes": 1}), 422, "bad_request")
    refused(call(server, "POST", f"/{empty}/adapt", json={"minutes": 0}), 422, "validation_error")
    cid, _ = corrected_collection(server, page_bytes, "cancel me")
    job = call(server, "POST", f"/{cid}/adapt", json={"minutes": 5}).json()
    assert call(server, "DELETE", f"/{cid}/jobs/{job['id']}").status_code == 202
    assert wait_for(server, cid, job["id"], {"cancelled", "done", "failed"}, timeout=120)["state"] == "cancelled"


def test_a_server_stopped_mid_job_marks_it_failed_and_stops_it(tiny_checkpoint, tmp_path, page_bytes):
    first = start_collections_server(tiny_checkpoint, tmp_path / "data")
    try:
        cid, _ = corrected_collection(first, page_bytes, "interrupted")
        job = call(first, "POST", f"/{cid}/adapt", json={"minutes": 5}).json()
        time.sleep(3)
    except BaseException:
        first.stop()
        raise
    second = kill_and_restart(first, tiny_checkpoint, tmp_path / "data")
    try:
        failed = call(second, "GET", f"/{cid}/jobs/{job['id']}").json()
        assert failed["state"] == "failed" and "server stopped" in failed["error"]
        deadline = time.monotonic() + 30  # the orphaned fine-tuning process was told to stop
        run_dir = str(tmp_path / "data" / "jobs" / job["id"])
        while time.monotonic() < deadline and _running(run_dir):
            time.sleep(0.5)
        assert not _running(run_dir)
    finally:
        second.stop()


def _running(run_dir: str) -> bool:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if run_dir in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    return True
            except OSError:
                continue
    return False
