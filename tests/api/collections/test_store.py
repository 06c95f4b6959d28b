"""api.collections.store: collections, pages and lines in SQLite with page images on disk; owners kept apart;
limits; corrections durable the moment they return, even under ``kill -9`` (a real process killed mid-stream)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from api.collections.exports import labels_zip, layout_zip
from api.collections.store import CollectionStore, NotFound, ReadLine, StoreLimit

ROOT = Path(__file__).resolve().parents[3]


def page_png() -> bytes:
    image = Image.new("L", (400, 120), 255)
    draw = ImageDraw.Draw(image)
    draw.text((20, 20), "first line", fill=0)
    draw.text((20, 70), "second line", fill=0)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


LINES = [ReadLine([[10, 10], [390, 10], [390, 45], [10, 45]], [[10, 40], [390, 40]], "frist line", 0.7),
         ReadLine([[10, 60], [390, 60], [390, 95], [10, 95]], [[10, 90], [390, 90]], "second lime", 0.6)]


@pytest.fixture
def store(tmp_path) -> CollectionStore:
    return CollectionStore(tmp_path / "data", max_pages=2, max_collections=3)


def test_a_page_is_stored_with_its_lines_and_corrections_are_kept(store):
    collection = store.create_collection("", "  Letters   1905 ")
    assert collection["name"] == "Letters 1905" and collection["pages"] == []
    page = store.add_page("", collection["id"], page_png(), "p1.png", "image/png", (400, 120), LINES)
    assert [line["text"] for line in page["lines"]] == ["frist line", "second lime"] and not page["done"]
    first, second = page["lines"]
    corrected = store.correct_line("", collection["id"], first["id"], " first   line ")
    assert corrected["text"] == corrected["corrected_text"] == "first line" and corrected["read_text"] == "frist line"
    store.delete_line("", collection["id"], second["id"])
    assert store.mark_done("", collection["id"], page["id"], True)["done"]
    again = CollectionStore(store.root)  # a new process sees the same
    page = again.page("", collection["id"], page["id"])
    assert [line["text"] for line in page["lines"]] == ["first line"]
    summary = again.collection("", collection["id"])["pages"][0]
    assert (summary["lines"], summary["corrected_lines"], summary["done"]) == (1, 1, True)
    path, media = again.page_image("", collection["id"], page["id"])
    assert path.read_bytes() == page_png() and media == "image/png"


def test_owners_see_only_their_own(store):
    mine = store.create_collection("key-a", "mine")
    page = store.add_page("key-a", mine["id"], page_png(), "p.png", "image/png", (400, 120), LINES)
    assert store.collections("key-b") == [] and len(store.collections("key-a")) == 1
    for call in (lambda: store.collection("key-b", mine["id"]),
                 lambda: store.page("key-b", mine["id"], page["id"]),
                 lambda: store.correct_line("key-b", mine["id"], page["lines"][0]["id"], "x"),
                 lambda: store.add_page("key-b", mine["id"], page_png(), "p.png", "image/png", (1, 1), []),
                 lambda: store.delete_collection("key-b", mine["id"])):
        with pytest.raises(NotFound):
            call()


def test_limits_and_bad_input(store):
    collection = store.create_collection("", "c")
    for _ in range(2):
        store.add_page("", collection["id"], page_png(), "p.png", "image/png", (400, 120), LINES)
    with pytest.raises(StoreLimit, match="at most 2 pages"):
        store.add_page("", collection["id"], page_png(), "p.png", "image/png", (400, 120), LINES)
    store.create_collection("", "d"), store.create_collection("", "e")
    with pytest.raises(StoreLimit, match="at most 3 collections"):
        store.create_collection("", "f")
    with pytest.raises(ValueError, match="1-200 characters"):
        store.create_collection("other", "   ")
    line = store.collection("", collection["id"])["pages"][0]
    page = store.page("", collection["id"], line["id"])
    with pytest.raises(ValueError, match="at most 2000"):
        store.correct_line("", collection["id"], page["lines"][0]["id"], "x" * 2001)
    with pytest.raises(NotFound):
        store.correct_line("", collection["id"], "nope", "x")


def test_exports_hold_the_corrected_text(store):
    collection = store.create_collection("", "c")
    page = store.add_page("", collection["id"], page_png(), "scan 1.png", "image/png", (400, 120), LINES)
    store.correct_line("", collection["id"], page["lines"][0]["id"], "first line")
    with zipfile.ZipFile(io.BytesIO(labels_zip(store, "", collection["id"]))) as archive:
        rows = archive.read("lines/labels.tsv").decode().splitlines()
        assert rows == ["file\ttext", "line_00000.png\tfirst line"]  # only corrected lines: checked text
        crop = Image.open(io.BytesIO(archive.read("lines/line_00000.png")))
        assert crop.height >= 30 and crop.width >= 300
    for fmt, marker in (("page", b"<Unicode>first line</Unicode>"), ("alto", b'CONTENT="first line"')):
        with zipfile.ZipFile(io.BytesIO(layout_zip(store, "", collection["id"], fmt))) as archive:
            names = sorted(archive.namelist())
            assert names == ["pages/0001_scan_1.png", "pages/0001_scan_1.xml"]
            xml = archive.read("pages/0001_scan_1.xml")
            assert marker in xml, xml  # the corrected text
            assert b"lime" in xml  # an uncorrected line keeps what was read


WRITER = textwrap.dedent("""
    import sys
    from api.collections.store import CollectionStore
    store = CollectionStore(sys.argv[1])
    collection, line_ids = sys.argv[2], sys.argv[3].split(",")
    for i in range(100000):
        store.correct_line("", collection, line_ids[i % len(line_ids)], f"text {i}")
        print(i, flush=True)  # acknowledged: the correction returned
""")


def test_nothing_acknowledged_is_lost_under_kill_9(store):
    collection = store.create_collection("", "c")
    page = store.add_page("", collection["id"], page_png(), "p.png", "image/png", (400, 120), LINES)
    ids = [line["id"] for line in page["lines"]]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store.root), collection["id"], ",".join(ids)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    acknowledged = -1
    for line in writer.stdout:
        acknowledged = int(line)
        if acknowledged >= 60:
            break
    writer.send_signal(signal.SIGKILL)  # mid-stream: the next write may be half done
    writer.wait()
    texts = {line["id"]: line["text"] for line in CollectionStore(store.root).page("", collection["id"],
                                                                                    page["id"])["lines"]}
    for i in (acknowledged - 1, acknowledged):  # the last acknowledged correction of each line is there
        number = int(texts[ids[i % 2]].split()[1])
        assert number >= i, (texts, acknowledged)
    assert json.loads(json.dumps(texts))  # the database opens and reads cleanly after the kill


def test_a_collection_is_read_again_through_its_stored_polygons(store, tiny_checkpoint, lines):
    from api.routes.collections import _reread
    from tests.segmentation.test_classical import compose_page
    from text_recognizer.data.linecut import cut_line
    from text_recognizer.recognizer import LineRecognizer

    image, truth = compose_page([path.name for path, _ in lines])
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    boxes = [(float(box[0][0]) - 8, float(box[0][1]) - 8, float(box[2][0]) + 8, float(box[2][1]) + 8) for box in truth]
    polygons = [[[x0, y0], [x1, y0], [x1, y1], [x0, y1]] for x0, y0, x1, y1 in boxes]
    found = [ReadLine(polygon, None, "unread", 0.1) for polygon in polygons]
    collection = store.create_collection("", "again")
    page = store.add_page("", collection["id"], buffer.getvalue(), "p.png", "image/png", image.size, found)
    store.correct_line("", collection["id"], page["lines"][0]["id"], "kept as corrected")
    reader = LineRecognizer(tiny_checkpoint, decoder="greedy")
    reread = _reread(store, "", collection["id"], reader)[0]
    assert reread["lines"][0]["text"] == "kept as corrected"  # corrections stay
    crops = [cut_line(image, polygon) for polygon in polygons]
    expected = [(line.text, round(line.confidence, 6)) for line in reader.predict_lines(crops)]
    assert [(line["read_text"], round(line["confidence"], 6)) for line in reread["lines"]] == expected
    assert all(line["text"] == line["read_text"] for line in reread["lines"][1:])  # what the new model read
