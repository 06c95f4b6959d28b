"""Inputs become one task per page with stable, clash-free names: a PDF's pages each, a broken PDF one task (it
fails when run), list files, and the outputs' paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.archive.collection import make_collection
from text_recognizer.archive.tasks import PageTask, file_output, plan

pytest.importorskip("pypdfium2")


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> Path:
    return make_collection(tmp_path_factory.mktemp("archive") / "scans")


def test_every_page_of_every_file_once_with_names_relative_to_the_inputs(collection):
    tasks, resolved = plan([str(collection), str(collection / "box1" / "letter.png")])
    assert resolved.problems == []
    assert [task.id for task in tasks] == ["box1/letter.png", "box1/note_1.png", "box2/broken.pdf",
                                           "box2/letter.pdf#page=1", "box2/letter.pdf#page=2"]
    assert [task.page for task in tasks] == [None, None, None, 1, 2]


def test_list_files_and_problems(collection, tmp_path):
    listing = tmp_path / "pages.txt"
    listing.write_text(f"# two of them\n{collection / 'box2' / 'letter.pdf'}\n\n{collection}/box1/note_1.png\n")
    tasks, resolved = plan([str(tmp_path / "missing.png")], [listing])
    assert [task.id for task in tasks] == ["box2/letter.pdf#page=1", "box2/letter.pdf#page=2", "box1/note_1.png"]
    assert resolved.problems == [(str(tmp_path / "missing.png"), "no such file or folder")]


def test_outputs_never_clash_and_rows_round_trip(tmp_path):
    one, two = PageTask("/a/box1/letter.pdf", "box1/letter", 3), PageTask("/a/box2/letter.png", "box2/letter")
    assert one.output(tmp_path, "json") == tmp_path / "json" / "box1" / "letter_page0003.json"
    assert two.output(tmp_path, "alto") == tmp_path / "alto" / "box2" / "letter.xml"
    assert file_output(tmp_path, "box1/letter", "pdf") == tmp_path / "pdf" / "box1" / "letter.pdf"
    assert PageTask.from_row(one.as_row()) == one and PageTask.from_row(two.as_row()) == two
