"""export_model.py: a serving checkpoint (current format, no training state, model card from flags)
that reads lines exactly as the training checkpoint it came from."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from text_recognizer.checkpoint import FORMAT_VERSION, load_checkpoint
from text_recognizer.data.folder import read_labels
from text_recognizer.recognizer import LineRecognizer
from training.export_model import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
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
