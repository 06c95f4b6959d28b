"""Batch runs, real ones: the bundled model reads a small collection in this process and on a local Ray (Ray Data,
actors), writes one JSON per page, per-page ALTO, a searchable PDF per file and the manifest; a broken file is
recorded and the run goes on; a second run reads only what failed; a run killed with SIGKILL and started again
reads every page exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.archive.collection import make_collection
from text_recognizer.archive.run import BatchSettings, default_workers, run_batch
from text_recognizer.archive.tasks import plan

pdfium = pytest.importorskip("pypdfium2")
REPO = Path(__file__).resolve().parents[2]


def manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def batch(*args: str, timeout: float = 600, python: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *python, "-m", "text_recognizer.archive.cli", *args, "--progress", "never"],
                          capture_output=True, text=True, cwd=REPO, timeout=timeout)


def imported(stderr: str) -> set[str]:
    """The modules ``python -X importtime`` says a process imported."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_local_run_then_a_second_run_that_only_retries_failures(tmp_path):
    scans = make_collection(tmp_path / "scans")
    tasks, _ = plan([str(scans)])
    out = tmp_path / "out"
    summary = run_batch(tasks, BatchSettings(out, ("json", "alto", "pdf"), executor="local"), progress=False)
    assert (summary.pages, summary.done_before, summary.read, summary.failed) == (5, 0, 4, 1)
    records = manifest(out)
    assert [record["status"] for record in records].count("failed") == 1
    failed = next(record for record in records if record["status"] == "failed")
    assert failed["id"] == "box2/broken.pdf" and "not a readable PDF" in failed["error"]
    assert all(record["lines"] >= 1 and 0 < record["mean_confidence"] <= 1 for record in records
               if record["status"] == "ok")
    pages = [json.loads((out / "json" / "box2" / f"letter_page000{n}.json").read_text()) for n in (1, 2)]
    assert [page["page"] for page in pages] == [1, 2] and (out / "alto" / "box2" / "letter_page0002.xml").exists()
    document = pdfium.PdfDocument(out / "pdf" / "box2" / "letter.pdf")
    texts = [page.get_textpage().get_text_range().replace("\r\n", "\n") for page in document]
    document.close()
    assert texts == ["\n".join(" ".join(line["text"].split()) for line in page["lines"]) for page in pages]
    assert not (out / "pdf" / "box2" / "broken.pdf").exists()
    again = run_batch(tasks, BatchSettings(out, ("json", "alto", "pdf", "hocr"), executor="local"), progress=False)
    assert (again.done_before, again.read, again.failed) == (4, 0, 1)  # only the broken file is tried again
    assert (out / "hocr" / "box1" / "letter.hocr").exists()  # a format asked for later, written from the results


def test_a_ray_run_from_the_command_line(tmp_path):
    pytest.importorskip("ray")
    scans = make_collection(tmp_path / "scans", images=3)
    (scans / "box2" / "broken.pdf").unlink()
    out = tmp_path / "out"
    done = batch(str(scans), "--output", str(out), "--format", "json,pdf", timeout=900, python=("-X", "importtime"))
    assert done.returncode == 0, done.stderr[-3000:]
    # the driver plans pages, collects records and writes the PDFs: it never loads torch (the actors do); that saved
    # 1.5-2 s of a 50-page run's start (benchmarks/results/batch.md)
    assert "ray" in imported(done.stderr) and "torch" not in imported(done.stderr)
    assert "5 pages: 0 done before, 5 read now, 0 failed" in done.stdout
    records = manifest(out)
    assert sorted(record["id"] for record in records) == sorted(
        ["box1/letter.png", "box1/note_1.png", "box1/note_2.png", "box2/letter.pdf#page=1", "box2/letter.pdf#page=2"])
    assert 1 <= len({record["worker"] for record in records}) <= default_workers()[0]  # a process per actor
    assert all(record["worker"] != os.getpid() for record in records)
    assert (out / "pdf" / "box2" / "letter.pdf").exists()
    again = batch(str(scans), "--output", str(out))
    assert again.returncode == 0 and "5 pages: 5 done before, 0 read now" in again.stdout


def test_killed_and_resumed_every_page_is_read_once(tmp_path):
    scans = make_collection(tmp_path / "scans", images=8)
    (scans / "box2" / "broken.pdf").unlink()
    out = tmp_path / "out"
    command = [sys.executable, "-m", "text_recognizer.archive.cli", str(scans), "--output", str(out),
               "--executor", "local", "--progress", "never"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if (out / "manifest.jsonl").exists() and len(manifest(out)) >= 3:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    first = [record for record in manifest(out) if record["status"] == "ok"]
    assert 3 <= len(first) < 10, "the run should have been killed halfway"
    resumed = batch(str(scans), "--output", str(out), "--executor", "local")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    records = [record for record in manifest(out) if record["status"] == "ok"]
    read = Counter(record["id"] for record in records if not (record["error"] or "").startswith("recovered"))
    assert len(read) == 10 and set(read.values()) == {1}, read  # none lost, none read twice


def test_actors_holding_every_cpu_do_not_hang_ray_data(tmp_path):
    """The known trap on small machines: a pool that takes every CPU must still finish (here the inputs are Ray
    Data items, so no read task waits for a CPU; this guards that design)."""
    pytest.importorskip("ray")
    from text_recognizer.archive.run import available_cpus

    scans = make_collection(tmp_path / "scans", images=2)
    (scans / "box2" / "broken.pdf").unlink()
    done = batch(str(scans), "--output", str(tmp_path / "out"), "--workers", str(available_cpus()), "--threads", "1",
                 timeout=600)
    assert done.returncode == 0 and "4 pages: 0 done before, 4 read now" in done.stdout, done.stderr[-3000:]
