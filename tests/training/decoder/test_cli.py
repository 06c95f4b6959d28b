"""``python -m training.decoder``: cache, tune (from folders or a cache, one reading or three), three-readings and
split-by-text, with the bundled model, the fixture line images and a small LM built here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.data.folder import read_labels
from text_recognizer.decoding.bundle import load_bundle, make_bundle, save_bundle
from text_recognizer.decoding.lm_builder import LanguageModelSpec, build_decoder_bundle
from text_recognizer.decoding.readings import SECTION
from text_recognizer.recognizer import DEFAULT_CHECKPOINT
from training.decoder.cli import main
from training.decoder.lines import checkpoint_sha256, load_cache

REPO = Path(__file__).resolve().parents[3]
LINES = REPO / "tests" / "fixtures" / "lines"
TEXT = ["the quick brown fox jumps over the lazy dog", "a quiet day by the old river", "read the map and move on"]
SMALL_GRID = ["--lm-weights", "0.6", "1.4", "--word-bonuses", "1.5", "--word-lm-weights", "0", "--blank-penalties", "0",
              "--beam-width", "4"]


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory) -> Path:
    codec = load_checkpoint(DEFAULT_CHECKPOINT).codec
    spec = LanguageModelSpec(order=4, word_order=2, word_min_count=1, lexicon=())
    bundle, _ = build_decoder_bundle([r.text for r in read_labels(LINES)] + TEXT, codec, spec, "test text")
    return save_bundle(bundle, tmp_path_factory.mktemp("bundle") / "in.decoder.pt")


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cache")
    out = {"one": folder / "one.pt", "three": folder / "three.pt"}
    assert main(["cache", "--checkpoint", str(DEFAULT_CHECKPOINT), "--data", str(LINES), "--out", str(out["one"])]) == 0
    assert main(["cache", "--checkpoint", str(DEFAULT_CHECKPOINT), "--data", str(LINES), "--out", str(out["three"]),
                 "--readings", "3", "--shift", "2"]) == 0
    return out


def test_a_cache_holds_every_line_in_file_name_order_with_its_model(caches):
    one, three = load_cache(caches["one"]), load_cache(caches["three"])
    records = sorted(read_labels(LINES), key=lambda r: r.path.name)
    assert one.files == [r.path.name for r in records] and one.references == [r.text for r in records]
    assert one.checkpoint_sha256 == checkpoint_sha256(DEFAULT_CHECKPOINT) and (one.shift, three.shift) == (0, 2)
    for a, b in zip(one.log_probs, three.log_probs):
        assert a.dtype == torch.float32 and a.shape == b.shape  # three readings keep the frames of one
        torch.testing.assert_close(a.exp().sum(-1), torch.ones(a.shape[0]), atol=2e-2, rtol=0)
    assert any(not torch.allclose(a, b, atol=1e-2) for a, b in zip(one.log_probs, three.log_probs))
    halves = one.half("first"), one.half("second")
    assert halves[0].files + halves[1].files == one.files and len(halves[0].files) == len(one.files) // 2


def test_tuning_from_a_cache_equals_tuning_from_the_folder(bundle_file, caches, tmp_path):
    from_folder, from_cache = tmp_path / "folder.decoder.pt", tmp_path / "cache.decoder.pt"
    common = ["tune", "--checkpoint", str(DEFAULT_CHECKPOINT), "--bundle", str(bundle_file), *SMALL_GRID]
    assert main([*common, "--data", str(LINES), "--out", str(from_folder)]) == 0
    assert main([*common, "--cache", str(caches["one"]), "--out", str(from_cache), "--report",
                 str(tmp_path / "r.md")]) == 0
    a, b = load_bundle(from_folder), load_bundle(from_cache)
    assert a["beam"] == b["beam"] and a["model_sha256"] == b["model_sha256"] == checkpoint_sha256(DEFAULT_CHECKPOINT)
    assert "held-out lines" in (tmp_path / "r.md").read_text() and (tmp_path / "r.json").is_file()


def test_three_readings_tuning_fills_only_the_three_readings_section(bundle_file, caches, tmp_path):
    single = tmp_path / "single.decoder.pt"
    common = ["tune", "--checkpoint", str(DEFAULT_CHECKPOINT), *SMALL_GRID]
    assert main([*common, "--bundle", str(bundle_file), "--cache", str(caches["one"]), "--out", str(single)]) == 0
    final = tmp_path / "final.decoder.pt"
    assert main([*common, "--bundle", str(single), "--cache", str(caches["three"]), "--three-readings",
                 "--out", str(final)]) == 0
    before, after = load_bundle(single), load_bundle(final)
    assert after["beam"] == before["beam"] and after["calibration"] == before["calibration"]
    assert after[SECTION]["shift"] == 2 and set(after[SECTION]) == {"shift", "beam", "calibration"}


def test_a_cache_of_the_wrong_kind_or_model_is_refused(bundle_file, caches, tmp_path, capsys):
    common = ["tune", "--checkpoint", str(DEFAULT_CHECKPOINT), "--bundle", str(bundle_file),
              "--out", str(tmp_path / "out.decoder.pt"), *SMALL_GRID]
    assert main([*common, "--cache", str(caches["three"])]) == 2
    assert "holds three readings: drop --three-readings" in capsys.readouterr().err
    other = load_cache(caches["one"])
    data = torch.load(caches["one"], weights_only=True)
    torch.save({**data, "checkpoint_sha256": "0" * 64}, tmp_path / "other.pt")
    assert main([*common, "--cache", str(tmp_path / "other.pt")]) == 2
    assert "another model's log-probabilities" in capsys.readouterr().err
    (tmp_path / "junk.pt").write_bytes(b"not a cache")
    assert main([*common, "--cache", str(tmp_path / "junk.pt")]) == 2
    assert "is not a cache of log-probabilities" in capsys.readouterr().err
    assert not (tmp_path / "out.decoder.pt").exists() and other.files


def test_three_readings_merge_needs_the_same_language_model(bundle_file, tmp_path, capsys):
    out = tmp_path / "merged.decoder.pt"
    assert main(["three-readings", "--bundle", str(bundle_file), "--three", str(bundle_file), "--out", str(out)]) == 0
    merged = load_bundle(out)
    assert merged[SECTION]["shift"] == 2
    codec = load_checkpoint(DEFAULT_CHECKPOINT).codec
    spec = LanguageModelSpec(order=3, word_order=2, word_min_count=1, lexicon=())
    other, _ = build_decoder_bundle(TEXT, codec, spec, "other text")
    other_file = save_bundle(other, tmp_path / "other.decoder.pt")
    assert main(["three-readings", "--bundle", str(bundle_file), "--three", str(other_file), "--out",
                 str(tmp_path / "bad.pt")]) == 2
    assert "differ in language model" in capsys.readouterr().err and not (tmp_path / "bad.pt").exists()


def test_split_by_text_keeps_the_pages_of_one_text_together(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    for stem in ("imp_0001_1", "imp_0001_2", "imp_0002_1", "imp_0003_1", "imp_0004_1"):
        (pages / f"{stem}.xml").write_text("<PcGts/>", encoding="utf-8")
        (pages / f"{stem}.jpg").write_bytes(b"jpeg")
    assert main(["split-by-text", "--pages", str(pages), "--out", str(tmp_path / "halves")]) == 0
    tune = sorted(p.name for p in (tmp_path / "halves" / "tune").iterdir())
    report = sorted(p.name for p in (tmp_path / "halves" / "report").iterdir())
    assert tune == ["imp_0001_1.jpg", "imp_0001_1.xml", "imp_0001_2.jpg", "imp_0001_2.xml", "imp_0003_1.jpg",
                    "imp_0003_1.xml"]
    assert report == ["imp_0002_1.jpg", "imp_0002_1.xml", "imp_0004_1.jpg", "imp_0004_1.xml"]
    assert main(["split-by-text", "--pages", str(tmp_path / "halves" / "nothing"), "--out", str(tmp_path / "x")]) == 2


def test_the_module_runs_as_a_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "training.decoder", "tune", "--help"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "--three-readings" in result.stdout and "--cache" in result.stdout


def test_tune_writes_the_tuned_bundle(bundle_file, tmp_path, capsys):
    codec = load_checkpoint(DEFAULT_CHECKPOINT).codec
    setup_bundle = load_bundle(bundle_file)
    records = read_labels(LINES)
    source, out = save_bundle(setup_bundle, tmp_path / "in.decoder.pt"), tmp_path / "out.decoder.pt"
    assert main(["tune", "--checkpoint", str(DEFAULT_CHECKPOINT), "--data", str(LINES), "--bundle", str(source),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{len(records)} held-out lines" in printed and "CER greedy" in printed and str(out) in printed
    assert load_bundle(out, codec)["model_sha256"] == checkpoint_sha256(DEFAULT_CHECKPOINT)


def test_tune_refuses_bad_input_with_exit_2(bundle_file, tmp_path, capsys):
    codec = load_checkpoint(DEFAULT_CHECKPOINT).codec
    setup_bundle = load_bundle(bundle_file)
    bundle = save_bundle(setup_bundle, tmp_path / "in.decoder.pt")
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    (empty_folder / "labels.tsv").write_text("file\ttext\n", encoding="utf-8")
    args = ["tune", "--checkpoint", str(DEFAULT_CHECKPOINT), "--out", str(tmp_path / "out.decoder.pt")]
    assert main([*args, "--data", str(empty_folder), "--bundle", str(bundle)]) == 2
    assert "error: no labelled lines" in capsys.readouterr().err

    no_lm = save_bundle(make_bundle(None, codec, None, "none"), tmp_path / "no_lm.decoder.pt")
    assert main([*args, "--data", str(LINES), "--bundle", str(no_lm)]) == 2
    assert "has no language model" in capsys.readouterr().err

    assert main([*args, "--data", str(LINES), "--bundle", str(tmp_path / "missing.decoder.pt")]) == 2
    assert "error: no decoder bundle" in capsys.readouterr().err
    assert not (tmp_path / "out.decoder.pt").exists()
