"""Model provenance: the bundled model's version, licence and data come from its model card."""

from __future__ import annotations

import shutil

import pytest

from api.provenance import read_provenance
from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.recognizer import DEFAULT_CHECKPOINT


@pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_file(), reason="no bundled model")
def test_bundled_model_is_marked_non_commercial():
    metadata = load_checkpoint(DEFAULT_CHECKPOINT).metadata
    p = read_provenance(DEFAULT_CHECKPOINT, metadata, "0.1.0")
    assert p.version == metadata["version"] and p.version.startswith("crnn-")
    assert p.model_card == "MODEL_CARD.md"
    assert "non-commercial research only" in p.licence and "Marti" in p.licence and not p.licence.startswith("Licence")
    assert p.training_data.startswith("IAM lines") and "`" not in p.training_data
    assert len(p.sha256) == 64


def test_card_only_applies_to_the_file_it_names(tmp_path, tiny_checkpoint):
    copy = tmp_path / "best.pt"
    shutil.copy(tiny_checkpoint, copy)
    (tmp_path / "MODEL_CARD.md").write_text("# Model `other.pt`\n\nLicence: something else.\n")
    p = read_provenance(copy, {"licence": "CC-BY-4.0", "data": ["a", "b"]}, None)
    assert p.model_card is None and p.licence == "CC-BY-4.0" and p.training_data == "a, b"
    assert p.version == f"best-{p.sha256[:12]}"
    (tmp_path / "MODEL_CARD.md").write_text(
        "# Model `best.pt`\n\n| Training data | my lines |\n\nLicence: **MIT**,\nfree.\n"
    )
    p = read_provenance(copy, {"version": "v7"}, None)
    assert (p.version, p.licence, p.training_data, p.model_card) == ("v7", "MIT, free.", "my lines", "MODEL_CARD.md")


def test_model_route_shows_the_bundled_licence():
    """/v1/model of the bundled model, through a real app."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings
    from tests.api.conftest import FIXTURES, wait_ready

    if not DEFAULT_CHECKPOINT.is_file():
        pytest.skip("no bundled model")
    with TestClient(create_app(Settings(access_log=False, workers=1))) as client:
        wait_ready(client.get)
        info = client.get("/v1/model").json()
        line = client.post("/v1/predict", files={"file": (FIXTURES / "line_00.png").read_bytes()}).json()
    version = load_checkpoint(DEFAULT_CHECKPOINT).provenance.model_version
    assert info["model_version"] == line["model_version"] == version
    assert "non-commercial" in info["licence"] and info["model_card"] == "MODEL_CARD.md"
