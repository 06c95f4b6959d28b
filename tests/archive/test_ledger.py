"""The record of a batch run: whole JSON results are what counts as done, manifest lines are durable and a line torn
by a crash neither breaks reading nor glues itself to the next line."""

from __future__ import annotations

import json

from text_recognizer.archive.ledger import RECORD_KEYS, Ledger, done_tasks
from text_recognizer.archive.tasks import PageTask
from text_recognizer.page_files import write_atomically


def test_done_means_a_whole_json_result(tmp_path):
    whole, torn, missing = (PageTask(f"/s/{name}.png", name) for name in ("whole", "torn", "missing"))
    write_atomically(whole.output(tmp_path, "json"), b'{"lines": []}')
    torn.output(tmp_path, "json").write_bytes(b'{"lines": [')  # as a crash mid-write without the rename would
    assert done_tasks([whole, torn, missing], tmp_path) == {"whole.png"}
    assert not list((tmp_path / "json").glob(".*partial"))


def test_manifest_lines_survive_a_torn_line(tmp_path):
    ledger = Ledger(tmp_path)
    ledger.append([{"id": "a.png", "status": "ok", "lines": 3}])
    with open(ledger.path, "a", encoding="utf-8") as handle:
        handle.write('{"id": "b.png", "sta')  # the driver killed mid-line
    ledger.append([{"id": "c.png", "status": "failed", "error": "broken"}])
    records = Ledger(tmp_path).records()
    assert [record["id"] for record in records] == ["a.png", "c.png"]
    assert list(records[0]) == list(RECORD_KEYS) and records[1]["error"] == "broken"
    assert all(json.loads(line) for line in ledger.path.read_text().splitlines()[::2])
