"""The page reader (``/page``) in a real headless browser, as ``test_browser.py`` drives the line page
(Debian's chromium through playwright; skipped without them): a page composed from the fixture lines is
uploaded, its lines are drawn over the image (SVG polygons scaled to the displayed image) and their text
listed, low-confidence words are marked, the copy button copies the page text, and errors are shown."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from tests.api.test_browser import CHROMIUM, FLAGS, playwright_api, pytestmark  # noqa: F401 - the same skips
from tests.segmentation.test_classical import compose_page

ROUTE = "**/v1/predict/page"


@pytest.fixture(scope="module")
def page_file(lines, tmp_path_factory):
    page, truth = compose_page([path.name for path, _ in lines])
    path = tmp_path_factory.mktemp("pages") / "composed.png"
    page.save(path)
    return path, len(truth)


@pytest.fixture(scope="module")
def context(server, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1300, "height": 900}
        )
        try:
            browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
            yield browser
        finally:
            browser.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def tab(context, server):
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    tab.goto(server.url + "/page")
    tab.js_errors = errors
    yield tab
    tab.close()


def _read(tab) -> int:
    with tab.expect_response(ROUTE) as response:
        tab.click("#read")
    tab.wait_for_selector("#busy[hidden]", state="attached")
    tab.wait_for_selector("#read:enabled")
    return response.value.status


def test_the_page_loads_with_accessible_controls(tab):
    assert tab.title() == "Handwritten page reader"
    assert tab.get_by_label("Image of a page").get_attribute("id") == "page-file"
    assert tab.get_by_role("button", name="Read page").is_visible()
    assert tab.get_by_role("button", name="Copy page text").is_disabled()
    assert tab.is_hidden("#page-box") and tab.get_attribute("#page-image", "src") is None
    assert "50% confidence" in tab.inner_text("#legend")
    assert tab.js_errors == []


def test_the_line_page_links_here(context, server):
    tab = context.new_page()
    tab.goto(server.url + "/")
    tab.click("text=Read a whole page")
    tab.wait_for_url("**/page")
    assert tab.title() == "Handwritten page reader"
    tab.close()


def test_a_page_is_drawn_and_listed(tab, server, page_file):
    path, count = page_file
    expected = httpx.post(server.url + "/v1/predict/page", files={"file": (path.name, path.read_bytes(), "image/png")},
                          timeout=120).json()
    tab.set_input_files("#page-file", str(path))
    tab.wait_for_selector("#page-box:not([hidden])")
    assert _read(tab) == 200
    assert tab.is_hidden("#error")
    polygons = tab.locator("#overlay polygon.line")
    assert polygons.count() == count
    items = tab.locator("#lines li")
    assert items.count() == count
    for i, line in enumerate(expected["lines"]):  # each word shown, the unsure ones marked (the tiny model has some)
        shown = items.nth(i).locator(".line-text > span:not(.sr-only), .line-text > mark").all_inner_texts()
        assert shown == [word["text"] for word in line["words"]]
        marked = items.nth(i).locator("mark.low").all_inner_texts()
        assert marked == [word["text"] for word in line["words"] if word["confidence"] < 0.5]
    assert tab.input_value("#page-text") == expected["text"]
    assert tab.inner_text("#summary").startswith(f"{count} lines found")
    # the overlay covers the displayed image and its coordinates are the page's pixels: each polygon's box on
    # the screen is its polygon scaled by displayed width / page width
    image_box, svg_box = tab.locator("#page-image").bounding_box(), tab.locator("#overlay").bounding_box()
    for key in ("x", "y", "width", "height"):
        assert abs(image_box[key] - svg_box[key]) < 1.5, (key, image_box, svg_box)
    assert tab.get_attribute("#overlay", "viewBox") == f"0 0 {expected['width']} {expected['height']}"
    scale = image_box["width"] / expected["width"]
    assert scale < 1.0  # the 1,400 px page is shown smaller than its pixels
    for i in (0, count - 1):  # centres and sizes: Chromium's boxes of stroked shapes include a margin for the stroke
        xs = [x for x, _ in expected["lines"][i]["polygon"]]
        ys = [y for _, y in expected["lines"][i]["polygon"]]
        drawn = polygons.nth(i).bounding_box()
        assert abs(drawn["x"] + drawn["width"] / 2 - (image_box["x"] + (min(xs) + max(xs)) / 2 * scale)) < 2
        assert abs(drawn["y"] + drawn["height"] / 2 - (image_box["y"] + (min(ys) + max(ys)) / 2 * scale)) < 2
        assert 0 <= drawn["width"] - (max(xs) - min(xs)) * scale < 12
        assert 0 <= drawn["height"] - (max(ys) - min(ys)) * scale < 12
    tab.locator("#lines li").first.hover()
    assert "active" in polygons.first.get_attribute("class")
    tab.click("#copy")
    tab.wait_for_selector("#copied:has-text('copied')")
    assert tab.evaluate("() => navigator.clipboard.readText()") == expected["text"]
    assert tab.js_errors == []


def test_low_confidence_words_are_marked(tab, server, page_file):
    """The page's request is answered with the server's real answer for the page, one word's confidence
    lowered (the tiny test model is sure of most words), as test_browser.py does for lines."""
    path, count = page_file
    body = httpx.post(server.url + "/v1/predict/page", files={"file": (path.name, path.read_bytes(), "image/png")},
                      timeout=120).json()
    line = next(line for line in body["lines"] if line["words"])
    for word in (w for line in body["lines"] for w in line["words"]):
        word["confidence"] = max(word["confidence"], 0.9)
    line["words"][0]["confidence"] = 0.23
    tab.route(ROUTE, lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(body)))
    tab.set_input_files("#page-file", str(path))
    assert _read(tab) == 200
    marked = tab.locator("#lines mark.low")
    assert marked.count() == 1 and marked.inner_text() == line["words"][0]["text"]
    assert marked.get_attribute("title") == "confidence 23%"
    assert tab.locator("#overlay polygon.word.low").count() == 1
    assert tab.js_errors == []


def test_a_blank_page_says_no_lines(tab, tmp_path):
    from PIL import Image

    blank = tmp_path / "blank.jpg"
    Image.new("RGB", (900, 1200), (240, 236, 225)).save(blank)
    tab.set_input_files("#page-file", str(blank))
    assert _read(tab) == 200
    assert tab.locator("#overlay polygon").count() == 0 and tab.locator("#lines li").count() == 0
    assert "No lines" in tab.inner_text("#summary")
    assert tab.is_disabled("#copy")


def test_bad_upload_shows_the_server_error(tab, tmp_path):
    bogus = tmp_path / "page.png"
    bogus.write_bytes(b"not really a png")
    tab.set_input_files("#page-file", str(bogus))
    assert _read(tab) == 400
    tab.wait_for_selector("#error:not([hidden])")
    assert "Error 400" in tab.inner_text("#error") and "not a recognised image" in tab.inner_text("#error")
    assert tab.locator("#lines li").count() == 0


def test_nothing_chosen(tab):
    tab.click("#read")
    tab.wait_for_selector("#error:not([hidden])")
    assert "Choose an image" in tab.inner_text("#error")


def test_the_page_is_read_in_the_chosen_language(tab, server, page_file):
    """The page reader sends the selectors as ?decoder=&language= and says which language read the page."""
    path, _ = page_file
    assert tab.get_by_label("Language").get_attribute("id") == "language"
    assert "auto (chosen for the page)" in tab.locator("#language option").all_inner_texts()
    tab.set_input_files("#page-file", str(path))
    tab.select_option("#decoder", "beam")
    real = httpx.post(server.url + "/v1/predict/page?decoder=beam",
                      files={"file": (path.name, path.read_bytes(), "image/png")}, timeout=120).json()
    answer = json.dumps({**real, "language": "fr"})
    tab.route(ROUTE + "?*", lambda route: route.fulfill(status=200, content_type="application/json", body=answer))
    with tab.expect_response(lambda r: "/v1/predict/page?" in r.url) as response:
        tab.click("#read")
    tab.wait_for_selector("#read:enabled")
    assert response.value.url.endswith("/v1/predict/page?decoder=beam") and response.value.status == 200
    assert "language French (fr)" in tab.inner_text("#summary")
    assert tab.js_errors == []


def test_a_pdf_is_listed_page_by_page_and_downloads_as_a_searchable_pdf(tab, page_file, tmp_path):
    from PIL import Image

    from tests.pdf.make import scan_pdf

    pdfium = pytest.importorskip("pypdfium2")
    path, count = page_file
    letters = scan_pdf([Image.open(path), Image.new("L", (600, 800), 235)], tmp_path / "letters.pdf")
    tab.set_input_files("#page-file", str(letters))
    assert tab.is_hidden("#page-box")  # a PDF is not drawn
    assert _read(tab) == 200
    headings = tab.locator("#lines li.page-heading").all_inner_texts()
    assert headings == [f"Page 1: {count} lines", "Page 2: 0 lines"]
    assert tab.locator("#lines li:not(.page-heading)").count() == count
    assert tab.inner_text("#summary").startswith(f"2 pages · {count} lines found")
    with tab.expect_download() as download:
        tab.click("#download-pdf")
    assert download.value.suggested_filename == "letters.searchable.pdf"
    saved = tmp_path / "saved.pdf"
    download.value.save_as(saved)
    document = pdfium.PdfDocument(saved)
    assert len(document) == 2 and document[0].get_textpage().get_text_range().strip()
    document.close()
    assert tab.js_errors == []
