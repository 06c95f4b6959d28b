"""export_model.py: a serving checkpoint (current format, no training state, model card from flags)
that reads lines exactly as the training checkpoint it came from."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import torch

from text_recognizer.checkpoint import FORMAT_VERSION, load_checkpoint
from text_recognizer.data.download import sha256_file
from text_recognizer.data.folder import read_labels
from text_recognizer.decoding.bundle import bundle_path, load_bundle, make_bundle, save_bundle
from text_recognizer.recognizer import LineRecognizer
from training.release.export_model import main

FIXTURES = Path(__file__).parents[2] / "fixtures"
V1_LAST = FIXTURES / "checkpoints" / "v1_run" / "last.pt"


def test_export_drops_training_state_and_sets_the_model_card(tmp_path, capsys):
    target = tmp_path / "serving.pt"
    assert main([str(V1_LAST), str(target), "--licence", "CC-BY 4.0", "--val-cer", "0.5", "--version", "tiny-1"]) == 0
    assert "exported" in capsys.readouterr().out
    source, exported = load_checkpoint(V1_LAST), load_checkpoint(target)
    assert exported.format_version == FORMAT_VERSION and exported.train_state is None
    assert "train_state" not in torch.load(target, weights_only=True)
    assert exported.licence == "CC-BY 4.0" and exported.metadata["version"] == "tiny-1"
    assert exported.provenance.val_cer == 0.5
    assert exported.provenance.data == source.provenance.data  # not given: kept
    assert exported.provenance.recipe == source.provenance.recipe and exported.decoding == source.decoding
    assert all(v.dtype == torch.float32 for v in exported.model_state.values() if v.is_floating_point())
    records = read_labels(FIXTURES / "lines")
    paths = [r.path for r in records]
    assert LineRecognizer(target).predict(paths) == LineRecognizer(V1_LAST).predict(paths)


def test_export_of_the_format_1_best_keeps_its_predictions(tmp_path):
    target = tmp_path / "serving.pt"
    assert main([str(FIXTURES / "checkpoints" / "v1_best.pt"), str(target)]) == 0
    expected = json.loads((FIXTURES / "checkpoints" / "v1_best.predictions.json").read_text())
    records = read_labels(FIXTURES / "lines")
    predictions = LineRecognizer(target).predict([r.path for r in records])
    assert dict(zip([r.path.name for r in records], predictions)) == expected


def tuned_for(checkpoint: Path, sha256: str | None = None) -> dict:
    """A decoder bundle (no LM, a beam setting) recording ``sha256`` (default: ``checkpoint``'s own)."""
    bundle = make_bundle(None, load_checkpoint(checkpoint).codec, None, "test", beam={"beam_width": 3})
    bundle["model_sha256"] = sha256 or hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    return bundle


def test_the_decoder_bundle_tuned_for_the_source_is_restamped_for_the_export(tmp_path, capsys):
    given = save_bundle(tuned_for(V1_LAST), tmp_path / "tuned" / "lm.decoder.pt")
    target = tmp_path / "serving.pt"
    assert main([str(V1_LAST), str(target), "--decoder-bundle", str(given)]) == 0
    assert "decoder bundle" in capsys.readouterr().out
    carried = load_bundle(bundle_path(target))
    assert carried["model_sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
    assert carried["beam"] == {"beam_width": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "tuned for another model" warning
        assert LineRecognizer(target).bundle["beam"] == {"beam_width": 3}


def test_a_decoder_bundle_for_another_model_is_refused_before_anything_is_written(tmp_path, capsys):
    given = save_bundle(tuned_for(V1_LAST, "0" * 64), tmp_path / "other.decoder.pt")
    target = tmp_path / "serving.pt"
    assert main([str(V1_LAST), str(target), "--decoder-bundle", str(given)]) == 2
    assert "was tuned for the model with sha256 000" in capsys.readouterr().err
    assert not target.exists() and not bundle_path(target).exists()


def test_the_bundle_beside_the_source_travels_only_if_it_was_tuned_for_it(tmp_path, capsys):
    source = tmp_path / "run" / "best.pt"
    source.parent.mkdir()
    shutil.copy(V1_LAST, source)
    save_bundle(tuned_for(source), bundle_path(source))
    assert main([str(source), str(tmp_path / "a.pt")]) == 0
    assert load_bundle(tmp_path / "a.decoder.pt")["model_sha256"] == sha256_file(tmp_path / "a.pt")

    save_bundle(tuned_for(source, "f" * 64), bundle_path(source))  # stale: tuned for an earlier model
    assert main([str(source), str(tmp_path / "b.pt")]) == 0
    assert "not carried" in capsys.readouterr().err
    assert (tmp_path / "b.pt").is_file() and not (tmp_path / "b.decoder.pt").exists()


def test_language_bundles_travel_restamped_and_are_checked_before_anything_is_written(tmp_path, capsys):
    given = save_bundle(tuned_for(V1_LAST), tmp_path / "tuned" / "en.decoder.pt")  # a bundle without a language: en
    target = tmp_path / "serving.pt"
    assert main([str(V1_LAST), str(target), "--language-bundle", f"fr={given}"]) == 2
    assert "the bundle is for 'en', not 'fr'" in capsys.readouterr().err and not target.exists()
    assert main([str(V1_LAST), str(target), "--language-bundle", "fr"]) == 2
    assert "XX=BUNDLE" in capsys.readouterr().err
    assert main([str(V1_LAST), str(target), "--language-bundle", f"en={given}"]) == 0
    carried = load_bundle(bundle_path(target, "en"))
    assert carried["model_sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
