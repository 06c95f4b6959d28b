"""The web page in a real headless browser (Debian's chromium driven by playwright; never a
downloaded browser): it loads, an uploaded fixture gives its text, drawing gives a response,
and errors are shown to the user."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("TEXT_RECOGNIZER_CHROMIUM", "/usr/bin/chromium")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no system browser at {CHROMIUM}: `apt-get install -y chromium` (Debian) to run the browser tests"),
]

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only; it drives the system chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def page(server, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            tab = context.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda error: errors.append(str(error)))
            tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            tab.goto(server.url + "/")
            tab.js_errors = errors
            yield tab
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def _recognise(page) -> int:
    """Press the button, wait for the request and for the page to finish; the page's CSP forbids
    eval, so the waits use selectors rather than JavaScript predicates."""
    with page.expect_response("**/v1/predict") as response:
        page.click("#recognise")
    page.wait_for_selector("#busy[hidden]", state="attached")
    page.wait_for_selector("#recognise:enabled")
    return response.value.status


def test_page_loads(page):
    assert page.title() == "Handwritten line recognizer"
    assert page.is_visible("canvas#canvas") and page.is_visible("#file") and page.is_visible("#recognise")


def test_error_shown_when_nothing_to_send(page):
    page.click("#clear")
    page.click("#recognise")
    page.wait_for_selector("#error:not([hidden])")
    assert "Draw a line" in page.inner_text("#error")


def test_upload_fixture_shows_its_text(page, lines):
    path, text = lines[0]
    page.set_input_files("#file", str(path))
    page.wait_for_selector("#preview:not([hidden])")
    assert _recognise(page) == 200
    assert page.is_hidden("#error")
    assert page.inner_text("#text") == text
    assert page.inner_text("#confidence").endswith("%")
    assert page.inner_text("#model").startswith("best-")


def test_bad_upload_shows_server_error(page, tmp_path):
    bogus = tmp_path / "notes.png"
    bogus.write_bytes(b"not really a png")
    page.set_input_files("#file", str(bogus))
    assert _recognise(page) == 400
    page.wait_for_selector("#error:not([hidden])")
    message = page.inner_text("#error")
    assert "Error 400" in message and "not a recognised image" in message


def test_drawing_gives_a_response(page):
    page.click("#clear")
    box = page.locator("#canvas").bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + box["height"] * 0.6)
    page.mouse.down()
    for i in range(60):  # a wavy stroke across the canvas
        page.mouse.move(box["x"] + 20 + i * 8, box["y"] + box["height"] * (0.4 + 0.2 * ((i // 3) % 2)))
    page.mouse.up()
    assert _recognise(page) == 200
    assert page.is_hidden("#error")
    assert page.inner_text("#confidence").endswith("%")


def test_no_javascript_errors(page):
    assert [e for e in page.js_errors if "400" not in e] == []
