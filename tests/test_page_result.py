"""Tests for text_recognizer.page_result: a page result's JSON form, and a module that loads without torch or numpy."""

from __future__ import annotations

import json
import subprocess
import sys

from text_recognizer.page_result import PageLine, PageResult, PageWord


def test_a_page_built_by_hand_survives_its_json() -> None:
    word = PageWord("Paris", 0.91234, ((10, 20), (60, 20), (60, 40), (10, 40)))
    lines = (PageLine("line_1", ((5, 15), (200, 15), (200, 45), (5, 45)), ((5, 40), (200, 40)), "Paris", 0.9, (word,),
                      language="fr"),
             PageLine("line_2", ((5, 50), (200, 50), (200, 80), (5, 80)), ((5, 75), (200, 75)), error="cannot cut"))
    page = PageResult("scan.pdf", 210, 300, lines, language="fr", dropped=2, page=3)
    record = json.loads(json.dumps(page.to_dict()))
    assert record["page"] == 3 and record["dropped_lines"] == 2 and record["text"] == "Paris"
    assert "error" not in record["lines"][0] and record["lines"][1]["error"] == "cannot cut"
    back = PageResult.from_dict(record)
    assert back.to_dict() == page.to_dict() and back.lines[1].error == "cannot cut" and back.page == 3
    assert back.lines[0].words[0].box == (10.0, 20.0, 60.0, 40.0) and back.lines[0].words[0].confidence == 0.9123


def test_the_types_load_without_torch_or_numpy() -> None:
    """Writers of results (the batch driver, exports) import these; the reader that makes them needs torch."""
    code = "import sys, text_recognizer.page_result; print('torch' in sys.modules or 'numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
