"""training.decoder.tune: beam settings and calibration re-tuned for a model on held-out lines, with the bundled
model, the fixture line images and a small LM built here."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.data.folder import read_labels
from text_recognizer.decoding.beam import BeamOptions
from text_recognizer.decoding.bundle import LanguageModelError, load_bundle, make_bundle, save_bundle
from text_recognizer.decoding.lm_builder import LanguageModelSpec, build_decoder_bundle
from text_recognizer.metrics import cer
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer
from training.decoder.lines import held_out_log_probs
from training.decoder.tune import (
    MIN_LINES,
    TUNED,
    TuneGrid,
    _choose,
    tune_bundle,
    tune_for_checkpoint,
)

LINES = Path(__file__).parents[2] / "fixtures" / "lines"
TEXT = ["the quick brown fox jumps over the lazy dog", "a quiet day by the old river", "read the map and move on",
        "seven blue cats sat on the table", "good morning to the world"]
REPORT_KEYS = {"lines", "tuned", "note", "greedy_cer", "default_beam_cer", "tuned_beam_cer", "settings",
               "previous_settings", "tuning_beam_width", "trials", "grid", "calibration", "seconds"}


@pytest.fixture(scope="module")
def setup():
    codec = load_checkpoint(DEFAULT_CHECKPOINT).codec
    records = read_labels(LINES)
    spec = LanguageModelSpec(order=4, word_order=2, word_min_count=1, lexicon=())
    bundle, _ = build_decoder_bundle([r.text for r in records] + TEXT, codec, spec, "test text")
    log_probs = held_out_log_probs(DEFAULT_CHECKPOINT, records)
    sha = hashlib.sha256(DEFAULT_CHECKPOINT.read_bytes()).hexdigest()
    tuned, report = tune_bundle(bundle, codec, log_probs, [r.text for r in records], sha)
    return {"codec": codec, "records": records, "bundle": bundle, "log_probs": log_probs, "sha": sha,
            "tuned": tuned, "report": report}


def test_log_probs_are_one_float32_cpu_matrix_per_line(setup):
    assert len(setup["log_probs"]) == len(setup["records"])
    for lp in setup["log_probs"]:
        assert lp.dtype == torch.float32 and lp.device.type == "cpu" and lp.dim() == 2
        assert lp.shape[1] == setup["codec"].num_classes
        torch.testing.assert_close(lp.exp().sum(-1), torch.ones(lp.shape[0]))


def test_the_report_and_the_tuned_bundle(setup):
    report, tuned = setup["report"], setup["tuned"]
    assert REPORT_KEYS <= set(report)
    assert report["tuned"] and report["lines"] == len(setup["records"]) and report["trials"] >= 1
    assert report["tuned_beam_cer"] <= report["default_beam_cer"]
    assert report["greedy_cer"] > 0  # the model misreads two fixture lines: something to tune on
    assert set(report["grid"][0]) == {*TUNED, "cer"} and report["tuning_beam_width"] == TuneGrid().beam_width
    assert tuned["beam"] == report["settings"] and tuned["beam"]["beam_width"] == BeamOptions().beam_width
    assert tuned["model_sha256"] == setup["sha"]
    assert tuned["lm"] == setup["bundle"]["lm"] and tuned["word_lm"] == setup["bundle"]["word_lm"]
    greedy = tuned["calibration"]["greedy"]  # greedy misreads: every level has both outcomes to fit
    assert report["calibration"]["greedy"] == {"char": "fitted", "word": "fitted", "line": "fitted"}
    assert set(greedy) == {"char", "word", "line"} and all({"weights", "bias"} <= set(m) for m in greedy.values())


def test_the_tuned_bundle_saves_loads_and_reads_what_tuning_measured(setup, tmp_path):
    path = save_bundle(setup["tuned"], tmp_path / "tuned.decoder.pt")
    assert load_bundle(path, setup["codec"])["beam"] == setup["tuned"]["beam"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recognizer = LineRecognizer(DEFAULT_CHECKPOINT, decoder="beam", decoder_bundle=path)
    assert not [w for w in caught if "another model" in str(w.message)]  # tuned for this very model
    lines = recognizer.predict_lines([r.path for r in setup["records"]])
    assert all(0.0 <= line.confidence <= 1.0 for line in lines)
    # the same logits as reading: the recognizer's CER is the one the report gives
    assert cer([r.text for r in setup["records"]], [line.text for line in lines]) == pytest.approx(
        setup["report"]["tuned_beam_cer"])


def test_too_few_lines_change_nothing(setup):
    bundle = {**setup["tuned"], "beam": {**setup["tuned"]["beam"], "lm_weight": 0.9}, "model_sha256": "older"}
    n = MIN_LINES - 1
    out, report = tune_for_checkpoint(DEFAULT_CHECKPOINT, bundle, setup["records"][:n])
    assert not report["tuned"] and "too few" in report["note"] and report["lines"] == n
    assert out["beam"] == bundle["beam"] and out["calibration"] == bundle["calibration"]
    assert out["model_sha256"] == "older"  # not tuned for the model, so it does not say it was
    assert report["settings"] == report["previous_settings"] == BeamOptions.from_dict(bundle["beam"]).to_dict()


def test_steps_keep_ties_on_the_bundles_settings_and_read_at_its_width():
    previous = BeamOptions(beam_width=24, lm_weight=1.4, word_bonus=0.5, blank_penalty=1.5)
    tried = []

    def flat(options):
        tried.append(options)
        return 0.1

    assert _choose(previous, TuneGrid(), True, flat) == previous
    assert all(o.beam_width == TuneGrid().beam_width for o in tried)

    def prefers_low_blank_penalty(options):
        return options.blank_penalty + (0.0 if options.lm_weight == 1.0 else 1.0)

    chosen = _choose(previous, TuneGrid(), False, prefers_low_blank_penalty)
    assert (chosen.lm_weight, chosen.word_bonus, chosen.blank_penalty, chosen.beam_width) == (1.0, 0.5, 0.0, 24)
    assert chosen.word_lm_weight == previous.word_lm_weight  # no word LM: its settings stay as they were


def test_a_bundle_without_a_language_model_is_refused(setup):
    empty = make_bundle(None, setup["codec"], None, "none")
    with pytest.raises(LanguageModelError, match="no language model"):
        tune_bundle(empty, setup["codec"], setup["log_probs"], [r.text for r in setup["records"]], setup["sha"])
