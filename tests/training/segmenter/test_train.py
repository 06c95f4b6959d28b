"""training/segmenter/train.py end to end on PAGE/ALTO folders the test draws: checks, cache, a short run,
its files, resume, W&B offline, and the weights read back as a segmenter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.layout_pages import write_page_folder
from text_recognizer.segmentation.learned import LearnedSegmenter
from training.segmenter.pages import CropDataset, load_pages
from training.segmenter.train import train

REPO = Path(__file__).resolve().parents[3]


def tiny(steps: int = 4) -> list[str]:
    """Flags of a run small enough for a test: a few steps of tiny crops through a tiny network."""
    return ["--steps", str(steps), "--batch-size", "2", "--crop", "128", "--widths", "4", "8", "--warmup", "1",
            "--eval-every", "2", "--save-every", "1", "--threads", "1"]


@pytest.fixture
def pages(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("WANDB_MODE", "disabled")
    folder = tmp_path / "pages"
    write_page_folder(folder, "alto", stem="a")
    write_page_folder(folder, "page", stem="b")
    return folder


def test_pages_are_checked_and_cached(pages, tmp_path):
    (pages / "c.xml").write_text("<not-a-layout/>", encoding="utf-8")
    loaded, report = load_pages([pages])
    assert report.pages == 2 and report.lines == 6
    assert [name for name, _ in report.problems] == ["c.xml"]
    assert list((tmp_path / "cache" / "segmentation").rglob("*.png"))
    again, _ = load_pages([pages])  # from the cache
    assert [page.lines for page in again] == [page.lines for page in loaded]
    image, targets = CropDataset(loaded, 3, seed=1)[2]
    assert image.shape == (1, 512, 512) and targets.shape == (2, 256, 256)
    assert targets[0].sum() > 0  # crops sit on lines


def test_a_short_run_writes_its_files_and_resumes(pages, tmp_path):
    run = tmp_path / "run"
    summary = train(["--data", str(pages), "--val-data", str(pages), "--run-dir", str(run), *tiny()])
    assert summary["step"] == 4 and summary["stopped"] == "finished"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "val"] == [2, 4]
    assert {"f1", "precision", "recall"} <= set(next(r for r in records if r["kind"] == "val"))
    segmenter = LearnedSegmenter.load(run / "best.pt")
    assert segmenter.card["trained_on"] == [str(pages)]
    with pytest.raises(SystemExit, match="already holds a run"):
        train(["--data", str(pages), "--run-dir", str(run), *tiny()])
    summary = train(["--data", str(pages), "--val-data", str(pages), "--run-dir", str(run), "--resume", *tiny(6)])
    assert summary["step"] == 6
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "val"] == [2, 4, 6]  # resumed at 4, not from 0


def test_bad_data_is_reported(pages, tmp_path):
    (pages / "b.png").unlink()  # b.xml's image is gone
    with pytest.raises(SystemExit, match="--bad-samples error"):
        train(["--data", str(pages), "--run-dir", str(tmp_path / "r1"), "--bad-samples", "error", *tiny()])
    with pytest.raises(ValueError, match="not a folder of PAGE/ALTO"):
        train(["--data", str(tmp_path / "nothing"), "--run-dir", str(tmp_path / "r2"), *tiny()])


def test_wandb_offline_run(pages, tmp_path):
    """The command as users run it, in its own process: a W&B run started in this one would keep wandb's
    process-wide state (its mode, its settings) for the W&B logger's own tests."""
    run = tmp_path / "run"
    env = {**os.environ, "WANDB_MODE": "offline", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "training.segmenter.train", "--data", str(pages), "--val-data", str(pages),
                    "--run-dir", str(run), "--wandb", *tiny()], cwd=REPO, env=env, check=True, capture_output=True,
                   timeout=600)
    offline = list((run / "wandb").glob("offline-run-*"))
    assert offline, "an offline W&B run directory"
    assert (run / "wandb_run_id").is_file()
    assert json.loads((run / "summary.json").read_text())["step"] == 4
