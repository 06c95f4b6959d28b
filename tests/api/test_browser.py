"""The web page in a real headless browser (Debian's chromium driven by playwright; never a
downloaded browser): it loads with no broken-image placeholder, its controls have accessible
names and work from the keyboard, an uploaded fixture gives its text, drawing gives a response,
4xx answers are shown to the user, and low-confidence words are highlighted.

``TEXT_RECOGNIZER_UPDATE_SCREENSHOT=1`` also writes the page's screenshot to ``docs/web_page.png``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.api.conftest import ROOT

CHROMIUM = os.environ.get("TEXT_RECOGNIZER_CHROMIUM", "/usr/bin/chromium")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"no system browser at {CHROMIUM}: `apt-get install -y chromium` (Debian) to run them",
    ),
]

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="pip install playwright (the Python package only; it drives the system chromium)"
)

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="module")
def page(server, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1100, "height": 900}
        )
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


def test_no_image_placeholder_before_a_file_is_chosen(page):
    """Before any upload no image (and so no broken-image icon with its alt text) is shown."""
    images = page.locator("img")
    assert images.count() == 1
    assert not images.first.is_visible() and page.is_hidden("#preview-box")
    assert page.get_attribute("#preview", "src") is None


def test_controls_have_accessible_names(page):
    assert page.get_by_label("Image of one line").get_attribute("id") == "file"
    assert page.get_by_label("Pen width").get_attribute("id") == "pen"
    assert page.get_by_label("API key", exact=True).get_attribute("type") == "password"
    assert page.get_by_role("button", name="Recognise").is_visible()
    assert page.get_by_role("button", name="Clear drawing").is_visible()
    assert page.get_by_role("img", name="Drawing area for one line of handwriting").is_visible()
    assert page.get_attribute("#result", "aria-live") == "polite" and page.get_attribute("#error", "role") == "alert"


def test_keyboard_reaches_recognise_and_presses_it(page, lines):
    """From the file input, Tab reaches the Recognise button and Enter sends the chosen file."""
    path, text = lines[7]
    page.set_input_files("#file", str(path))
    page.focus("#file")
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.locator("#recognise:focus").count():
            break
    assert page.locator("#recognise:focus").count() == 1, "Tab never reached the Recognise button"
    with page.expect_response("**/v1/predict") as response:
        page.keyboard.press("Enter")
    page.wait_for_selector("#recognise:enabled")
    assert response.value.status == 200
    page.wait_for_selector("#text:has-text('" + text + "')")


def test_error_shown_when_nothing_to_send(page):
    page.click("#clear")
    page.click("#recognise")
    page.wait_for_selector("#error:not([hidden])")
    assert "Draw a line" in page.inner_text("#error")


def test_upload_fixture_shows_its_text(page, lines):
    path, text = lines[0]
    page.set_input_files("#file", str(path))
    page.wait_for_selector("#preview-box:not([hidden])")
    assert page.locator("#preview").evaluate("img => img.naturalWidth") == 384  # a real image, not a placeholder
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
    assert page.inner_text("#text") == ""  # the previous line's text is not left beside the error


def test_unsupported_format_shows_415(page, tmp_path):
    gif = tmp_path / "line.gif"
    Image.new("L", (64, 16), 255).save(gif, format="GIF")
    page.set_input_files("#file", str(gif))
    assert _recognise(page) == 415
    page.wait_for_selector("#error:not([hidden])")
    assert "Error 415" in page.inner_text("#error") and "GIF" in page.inner_text("#error")


def test_low_confidence_words_are_highlighted(page, server, lines):
    """Per-word confidences (``words``, from the beam-search decoder) mark the unsure words. The page's
    request is answered with the server's real answer for the same image, ``words`` added (the greedy
    decoder has none; the browser cannot replay a file upload, so the test posts the image itself)."""
    path, text = lines[0]  # "hello world"
    real = httpx.post(
        server.url + "/v1/predict", files={"file": (path.name, path.read_bytes(), "image/png")}, timeout=30
    )
    assert real.status_code == 200 and real.json()["text"] == text
    body = {
        **real.json(),
        "words": [
            {"text": "hello", "confidence": 0.93, "start": 0, "end": 20},
            {"text": "world", "confidence": 0.31, "start": 24, "end": 44},
        ],
    }

    def add_words(route):
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/v1/predict", add_words)
    try:
        page.set_input_files("#file", str(path))
        status = _recognise(page)
        assert status == 200, page.inner_text("#error")
    finally:
        page.unroute("**/v1/predict")
    marked = page.locator("#text mark.low")
    assert marked.count() == 1 and marked.inner_text() == "world"
    assert marked.get_attribute("title") == "confidence 31%"
    assert "(uncertain, 31%)" in page.inner_text("#text .sr-only")
    assert page.is_visible("#legend")
    shot = page.screenshot(full_page=True)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000
    if os.environ.get("TEXT_RECOGNIZER_UPDATE_SCREENSHOT"):
        (ROOT / "docs" / "web_page.png").write_bytes(shot)


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


def test_the_language_selector(page, server, lines):
    """The decoder and language selectors: the model's languages from /v1/model (the tiny model has none, so only
    the server default; then a bilingual model's answer), sent as ?decoder=&language=, a 422 for a language the
    model lacks shown as an error, and the language of the answer shown with the text."""
    assert page.get_by_label("Decoder").get_attribute("id") == "decoder"
    assert page.get_by_label("Language").get_attribute("id") == "language"
    assert page.locator("#language option").evaluate_all("options => options.map(o => o.value)") == ["", "auto"]
    assert page.is_disabled("#language option[value=auto]")
    assert "none" in page.inner_text("#language-default")
    model = httpx.get(server.url + "/v1/model", timeout=30).json()
    bilingual = json.dumps({**model, "languages": ["en", "fr"], "language": "auto"})
    page.route("**/v1/model", lambda route: route.fulfill(status=200, content_type="application/json", body=bilingual))
    path, text = lines[0]
    try:
        page.reload()
        page.wait_for_selector("#language option[value=fr]", state="attached")
        assert page.locator("#language option").all_inner_texts()[1:] == ["auto (chosen for the line)", "English (en)",
                                                                          "French (fr)"]
        assert page.is_enabled("#language option[value=auto]") and "auto" in page.inner_text("#language-default")
        page.select_option("#decoder", "beam")
        page.select_option("#language", "fr")
        page.set_input_files("#file", str(path))
        with page.expect_response(lambda r: "/v1/predict?" in r.url) as response:
            page.click("#recognise")
        page.wait_for_selector("#recognise:enabled")
        assert response.value.status == 422 and "decoder=beam&language=fr" in response.value.url
        page.wait_for_selector("#error:not([hidden])")  # the real server: the tiny model has no French bundle
        assert "Error 422" in page.inner_text("#error") and "French (fr)" in page.inner_text("#error")
        real = httpx.post(server.url + "/v1/predict", files={"file": (path.name, path.read_bytes(), "image/png")},
                          timeout=30).json()
        answer = json.dumps({**real, "language": "fr"})
        page.route("**/v1/predict?*", lambda route: route.fulfill(status=200, content_type="application/json",
                                                                    body=answer))
        with page.expect_response(lambda r: "/v1/predict?" in r.url) as response:
            page.click("#recognise")
        page.wait_for_selector("#recognise:enabled")
        assert response.value.status == 200 and page.is_hidden("#error")
        assert page.inner_text("#text") == text and page.inner_text("#read-language") == "French (fr)"
    finally:
        page.unroute("**/v1/model")
        page.unroute("**/v1/predict?*")
        page.reload()  # the server's own languages and defaults again
    page.wait_for_selector("#language-default:has-text('none')")
    assert page.input_value("#language") == "" and page.input_value("#decoder") == ""


def test_no_javascript_errors(page):
    assert [e for e in page.js_errors if "400" not in e and "415" not in e and "422" not in e] == []
