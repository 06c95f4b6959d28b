"""The bundled model loads by default and reads handwriting-like lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from text_recognizer.data.folder import read_labels
from text_recognizer.metrics import cer
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer

FIXTURES = Path(__file__).parent / "fixtures" / "lines"
IAM_VAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "iam" / "val"


@pytest.fixture(scope="module")
def recognizer() -> LineRecognizer:
    assert DEFAULT_CHECKPOINT.is_file(), "the bundled model text_recognizer/artifacts/default.pt is missing"
    return LineRecognizer()  # no checkpoint: the bundled one


def test_bundled_model_is_small_and_documented(recognizer):
    assert DEFAULT_CHECKPOINT.stat().st_size < 20 * 2**20
    assert "non-commercial" in recognizer.metadata["licence"]
    card = (DEFAULT_CHECKPOINT.parent / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert f"(version `{recognizer.metadata['version']}`)" in card.splitlines()[0]  # the card is this model's
    assert recognizer.config.deslant == ("Deslanting stem" in card)  # and says how its stem reads lines


def test_bundled_model_reads_fixture_lines(recognizer):
    records = read_labels(FIXTURES)
    predictions = recognizer.predict([r.path for r in records])
    assert cer([r.text for r in records], predictions) < 0.3, predictions


@pytest.mark.skipif(not (IAM_VAL / "labels.tsv").is_file(), reason=f"{IAM_VAL} not present (development data only)")
def test_bundled_model_on_iam_val_subset(recognizer):
    from text_recognizer.data.tokenization import detokenize

    records = read_labels(IAM_VAL)[:150]
    predictions = recognizer.predict([r.path for r in records])
    assert cer([detokenize(r.text) for r in records], predictions) < 0.2


def test_bundled_model_loads_as_shipped():
    """default.pt is read as it is on disk (never rewritten): its decoding, model card and weights."""
    from text_recognizer.checkpoint import load_checkpoint

    before = DEFAULT_CHECKPOINT.read_bytes()
    bundle = load_checkpoint(DEFAULT_CHECKPOINT)
    assert bundle.decoding.output_kind == "ctc" and bundle.decoding.collapse_repeats
    assert bundle.provenance.data and bundle.provenance.val_cer is not None
    assert bundle.build_model().config == bundle.model_config
    assert DEFAULT_CHECKPOINT.read_bytes() == before
