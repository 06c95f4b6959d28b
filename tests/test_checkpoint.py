"""Tests for text_recognizer.checkpoint: the bundle's round trip, atomic saves, weights_only loads,
clear errors, and format-1 files (tests/fixtures/checkpoints) that keep loading and predicting."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import torch

from text_recognizer import __version__
from text_recognizer.checkpoint import (
    FORMAT_VERSION,
    Checkpoint,
    CheckpointError,
    Decoding,
    Provenance,
    load_checkpoint,
    save_checkpoint,
)
from text_recognizer.codec import Codec
from text_recognizer.data.folder import read_labels
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import build_model
from text_recognizer.recognizer import LineRecognizer

CONFIG = ModelConfig(
    kind="line_cnn",
    height=16,
    cnn_channels=(4, 8),
    feature_dim=8,
    conv_blocks=1,
    conv_kernel=3,
    num_classes=Codec("abc").num_classes,
)
FIXTURES = Path(__file__).parent / "fixtures"
V1_BEST = FIXTURES / "checkpoints" / "v1_best.pt"


def bundle(**changes) -> Checkpoint:
    torch.manual_seed(0)
    fields = dict(
        model_config=CONFIG,
        codec=Codec("abc"),
        model_state=build_model(CONFIG).state_dict(),
        decoding=Decoding("ctc", "natural", {"beam_width": 8}),
        provenance=Provenance(
            data="three letters",
            recipe={"optim": {"lr": 0.001}},
            created="2026-11-30T12:00:00+00:00",
            git_rev="abc123",
            val_cer=0.25,
            val_data="val",
            epoch=3,
            step=120,
            model_version="v-test",
        ),
        licence="CC0",
        train_state={"counters": {"step": 120}, "rng": {"torch": torch.get_rng_state()}},
        extra={"note": "anything plain"},
    )
    return Checkpoint(**{**fields, **changes})


def test_round_trip(tmp_path: Path) -> None:
    original = bundle()
    path = save_checkpoint(original, tmp_path / "runs" / "last.pt")  # parent folders are created
    assert path == tmp_path / "runs" / "last.pt" and path.is_file()
    loaded = load_checkpoint(path)
    assert loaded.format_version == FORMAT_VERSION and loaded.source == str(path)
    assert loaded.versions == {"package": __version__, "torch": str(torch.__version__)}
    for name in ("model_config", "codec", "decoding", "provenance", "licence", "extra"):
        assert getattr(loaded, name) == getattr(original, name), name
    assert loaded.train_state["counters"] == {"step": 120}
    assert torch.equal(loaded.train_state["rng"]["torch"], original.train_state["rng"]["torch"])
    model = loaded.build_model()
    for key, value in original.model_state.items():
        assert torch.equal(model.state_dict()[key], value)


def test_loads_with_weights_only_as_plain_types(tmp_path: Path) -> None:
    path = save_checkpoint(bundle(), tmp_path / "best.pt")
    raw = torch.load(path, weights_only=True)  # plain types only: no pickled classes
    assert raw["codec"] == {"charset": "abc", "blank_id": 0}
    assert raw["decoding"] == {"output_kind": "ctc", "spacing": "natural", "decoder": {"beam_width": 8}}
    assert raw["provenance"]["git_rev"] == "abc123" and raw["licence"] == "CC0"
    assert "loss" not in raw and "metadata" not in raw  # format 1's names


def test_metadata_is_the_flat_model_card() -> None:
    assert bundle().metadata == {
        "data": "three letters",
        "val_cer": 0.25,
        "val_data": "val",
        "epoch": 3,
        "step": 120,
        "licence": "CC0",
        "version": "v-test",
    }
    assert bundle(provenance=Provenance(), licence="").metadata == {}  # unknown facts are left out


def test_without_train_state_none_is_saved(tmp_path: Path) -> None:
    path = save_checkpoint(bundle(train_state=None), tmp_path / "best.pt")
    assert "train_state" not in torch.load(path, weights_only=True)
    assert load_checkpoint(path).train_state is None


def test_save_needs_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="needs a Checkpoint, got dict"):
        save_checkpoint({"model_config": CONFIG.to_dict()}, tmp_path / "x.pt")


def test_decoding_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="output_kind must be one of .* got 'beam'"):
        Decoding("beam")
    with pytest.raises(ValueError, match="spacing must be one of .* got 'iam'"):
        Decoding("ctc", "iam")
    assert Decoding("ctc").collapse_repeats and not Decoding("per_window").collapse_repeats


def test_atomic_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(bundle(), path)
    save_checkpoint(bundle(licence="overwritten"), path)
    assert sorted(os.listdir(tmp_path)) == ["last.pt"]
    assert load_checkpoint(path).licence == "overwritten"


def test_failed_save_keeps_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(bundle(), path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle this")

    with pytest.raises(RuntimeError, match="cannot pickle"):
        save_checkpoint(bundle(extra={"bad": Unpicklable()}), path)
    assert sorted(os.listdir(tmp_path)) == ["last.pt"]
    assert load_checkpoint(path).licence == "CC0"


def test_weights_that_do_not_fit_the_config(tmp_path: Path) -> None:
    other = dataclasses.replace(CONFIG, feature_dim=16)
    path = save_checkpoint(bundle(model_state=build_model(other).state_dict()), tmp_path / "mixed.pt")
    with pytest.raises(CheckpointError, match="weights do not fit its model config") as info:
        load_checkpoint(path).build_model()
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.pt"
    with pytest.raises(CheckpointError, match="does not exist") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_directory_is_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"PK\x03\x04garbage"])
def test_corrupt_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="could not be read") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_truncated_file(tmp_path: Path) -> None:
    path = save_checkpoint(bundle(), tmp_path / "last.pt")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="could not be read") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_pickled_object_rejected_by_weights_only(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.save({"model": build_model(CONFIG)}, path)  # a whole module: not plain types
    with pytest.raises(CheckpointError, match="could not be read") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_not_a_dict(tmp_path: Path) -> None:
    path = tmp_path / "list.pt"
    torch.save([1, 2, 3], path)
    with pytest.raises(CheckpointError, match="does not hold a dict but list") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_newer_format_version(tmp_path: Path) -> None:
    path = tmp_path / "new.pt"
    torch.save({**bundle().to_dict(), "format_version": FORMAT_VERSION + 1}, path)
    with pytest.raises(CheckpointError, match=f"format version {FORMAT_VERSION + 1}, .* reads versions 1, 2") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("key", ["model_config", "codec", "model_state", "decoding"])
def test_missing_keys(tmp_path: Path, key: str) -> None:
    data = bundle().to_dict()
    del data[key]
    path = tmp_path / "partial.pt"
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=key) as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_missing_format_version(tmp_path: Path) -> None:
    path = tmp_path / "old.pt"
    data = bundle().to_dict()
    del data["format_version"]
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="format_version") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_unknown_model_setting_is_a_checkpoint_error(tmp_path: Path) -> None:
    path = tmp_path / "future.pt"
    data = bundle().to_dict()
    data["model_config"]["attention_heads"] = 4
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="attention_heads") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_checkpoint_error_is_value_error() -> None:
    assert issubclass(CheckpointError, ValueError)


# -- format 1 (written before the bundle existed) ----------------------------------------------------


def test_format_1_fixture_loads_as_a_bundle() -> None:
    loaded = load_checkpoint(V1_BEST)
    assert loaded.format_version == 1
    assert loaded.decoding == Decoding("ctc", "natural", {})  # from the top-level "loss": "ctc"
    assert loaded.provenance.data == "synthetic (256 lines/epoch, seed 0)"
    assert (loaded.provenance.epoch, loaded.provenance.step) == (6, 192) and loaded.provenance.val_cer < 0.75
    assert loaded.provenance.recipe["model"]["kind"] == "line_cnn"  # format 1's "config"
    assert loaded.versions == {"package": "0.1.0"} and loaded.train_state is None and loaded.extra == {}


def test_format_1_fixture_predicts_what_it_predicted_when_it_was_written() -> None:
    expected = json.loads((FIXTURES / "checkpoints" / "v1_best.predictions.json").read_text())
    records = read_labels(FIXTURES / "lines")
    recognizer = LineRecognizer(V1_BEST)
    assert recognizer.loss == "ctc"
    assert dict(zip([r.path.name for r in records], recognizer.predict([r.path for r in records]))) == expected


def test_format_1_resaved_is_format_2_with_the_same_contents(tmp_path: Path) -> None:
    old = load_checkpoint(V1_BEST)
    new = load_checkpoint(save_checkpoint(old, tmp_path / "v2.pt"))
    assert new.format_version == FORMAT_VERSION and new.versions["package"] == __version__
    for name in ("model_config", "codec", "decoding", "provenance", "licence", "train_state", "extra"):
        assert getattr(new, name) == getattr(old, name), name
    assert all(torch.equal(new.model_state[k], v) for k, v in old.model_state.items())


def test_format_1_per_window_model_and_model_card(tmp_path: Path) -> None:
    """``loss: nll`` meant per-window outputs; ``metadata`` was the model card; unknown keys go to ``extra``."""
    path = tmp_path / "v1_nll.pt"
    torch.save(
        {
            "format_version": 1,
            "library_version": "0.0.9",
            "model_config": CONFIG.to_dict(),
            "codec": Codec("abc").to_dict(),
            "model_state": build_model(CONFIG).state_dict(),
            "loss": "nll",
            "metadata": {"data": "d", "val_cer": 0.5, "licence": "L", "version": "m1"},
            "config": {"data": {"detokenize": False}},
            "kind": "dump",
        },
        path,
    )
    loaded = load_checkpoint(path)
    assert loaded.decoding == Decoding("per_window", "as_labelled", {}) and not loaded.decoding.collapse_repeats
    assert loaded.metadata == {"data": "d", "val_cer": 0.5, "licence": "L", "version": "m1"}
    assert loaded.versions == {"package": "0.0.9"} and loaded.extra == {"kind": "dump"}
    assert LineRecognizer(path).loss == "nll"
