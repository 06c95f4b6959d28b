"""The collections page (``/collections``) in a real headless browser (Debian's chromium through playwright; skipped
without them), against a real uvicorn server with its own data directory and an API key: create a collection,
upload a page (read by the server), correct two lines in place (saved at once: checked through the API), delete a
false line, mark the page done, and download the corrected lines."""

from __future__ import annotations

import io
import shutil
import time
import zipfile

import httpx
import pytest

from tests.api.test_browser import CHROMIUM, FLAGS, playwright_api, pytestmark  # noqa: F401 - the same skips
from tests.segmentation.test_classical import compose_page

KEY = {"X-API-Key": "key-a"}


@pytest.fixture(scope="module")
def page_file(lines, tmp_path_factory):
    page, _ = compose_page([path.name for path, _ in lines])
    path = tmp_path_factory.mktemp("pages") / "letter.png"
    page.save(path)
    return path


@pytest.fixture
def tab(collections_server, tmp_path):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(str(tmp_path / "profile"), executable_path=CHROMIUM,
                                                       headless=True, args=FLAGS, accept_downloads=True,
                                                       viewport={"width": 1300, "height": 900})
        try:
            tab = browser.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda error: errors.append(str(error)))
            tab.goto(collections_server.url + "/collections")
            tab.js_errors = errors
            yield tab
        finally:
            browser.close()
            shutil.rmtree(tmp_path / "profile", ignore_errors=True)


def test_upload_correct_delete_and_export_in_the_browser(tab, collections_server, page_file):
    server = collections_server
    assert tab.title() == "Collections: read and correct pages"
    tab.click("summary")
    tab.fill("#key", "key-a")
    tab.dispatch_event("#key", "change")
    tab.fill("#new-name", "Letters from the browser")
    tab.click("#create")
    tab.wait_for_selector("#upload-row:not([hidden])")
    tab.set_input_files("#page-files", str(page_file))
    with tab.expect_response("**/pages") as uploaded:
        tab.click("#add-pages")
    assert uploaded.value.status == 201
    tab.wait_for_selector("#pages button")
    tab.click("#pages button")
    tab.wait_for_selector("#lines input")
    inputs = tab.locator("#lines input")
    assert inputs.count() >= 3 and tab.locator("#overlay polygon").count() == inputs.count()
    for index, text in ((0, "first line corrected"), (1, "second line corrected")):
        field = tab.get_by_label(f"Line {index + 1}", exact=True)
        field.fill(text)
        with tab.expect_response("**/lines/*"):
            field.press("Enter")
    tab.wait_for_selector("#saved:has-text('line 2 saved')")
    count = inputs.count()
    with tab.expect_response("**/lines/*"):
        tab.get_by_role("button", name="Delete line 3 (not writing)").click()
    tab.wait_for_selector(f"#lines li:nth-child({count}) input", state="detached")
    with tab.expect_response("**/pages/*"):
        tab.check("#done")

    collection = httpx.get(server.url + "/v1/collections", headers=KEY).json()[0]
    page = httpx.get(f"{server.url}/v1/collections/{collection['id']}/pages/{collection['pages'][0]['id']}",
                     headers=KEY).json()
    assert [line["text"] for line in page["lines"][:2]] == ["first line corrected", "second line corrected"]
    assert len(page["lines"]) == count - 1 and page["done"] is True  # saved at once, no save button

    with tab.expect_download() as download:
        tab.click("#export-labels")
    with zipfile.ZipFile(io.BytesIO(open(download.value.path(), "rb").read())) as archive:
        rows = archive.read("lines/labels.tsv").decode().splitlines()[1:]
    assert [row.split("\t")[1] for row in rows] == ["first line corrected", "second line corrected"]
    assert tab.is_hidden("#error") and tab.js_errors == []


def test_adapting_from_the_browser(tab, collections_server, page_file):
    server = collections_server
    from tests.api.test_collections import corrected_collection

    class Url:  # what corrected_collection's calls need of a server
        url = server.url

    cid, count = corrected_collection(Url, page_file.read_bytes(), "adapt from the browser")
    tab.click("summary")
    tab.fill("#key", "key-a")
    tab.dispatch_event("#key", "change")
    tab.wait_for_selector(f"#collection option[value='{cid}']", state="attached")
    tab.select_option("#collection", cid)
    tab.wait_for_selector("#adapt-row:not([hidden])")
    tab.fill("#minutes", "0.2")
    with tab.expect_response("**/adapt") as started:
        tab.click("#adapt")
    assert started.value.status == 202
    tab.wait_for_selector("#job-status:has-text('adapting on')", timeout=30_000)
    tab.reload()  # the job runs on the server: a reloaded page finds it again
    tab.click("summary")
    tab.fill("#key", "key-a")
    tab.dispatch_event("#key", "change")
    tab.wait_for_selector(f"#collection option[value='{cid}']", state="attached")
    tab.select_option("#collection", cid)
    tab.wait_for_selector("#job-status:not(:empty)", timeout=30_000)
    deadline = time.monotonic() + 240  # the page polls the job every 2 s (no eval under its CSP: poll here too)
    while tab.inner_text("#job-status").startswith("adapting") and time.monotonic() < deadline:
        tab.wait_for_timeout(1000)
    status = tab.inner_text("#job-status")
    assert status.startswith("adapted") or "keep the served model" in status, status
    assert tab.is_hidden("#reread") == ("keep the served model" in status)
    assert tab.is_hidden("#error") and tab.js_errors == []
