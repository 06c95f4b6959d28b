"""Tests for text_recognizer.checkpoint: atomic saves, weights_only loads, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from text_recognizer import __version__
from text_recognizer.checkpoint import FORMAT_VERSION, CheckpointError, load_checkpoint, save_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.crnn import build_model

CONFIG = ModelConfig(kind="line_cnn", height=16, cnn_channels=(4, 8), feature_dim=8, conv_blocks=1,
                     conv_kernel=3, num_classes=Codec("abc").num_classes)


def payload() -> dict:
    torch.manual_seed(0)
    model = build_model(CONFIG)
    return {
        "model_config": CONFIG.to_dict(),
        "codec": Codec("abc").to_dict(),
        "model_state": model.state_dict(),
        "loss": 1.25,
        "epoch": 3,
        "rng": torch.get_rng_state(),
    }


def test_round_trip(tmp_path: Path) -> None:
    data = payload()
    path = save_checkpoint(data, tmp_path / "runs" / "last.pt")  # parent folders are created
    assert path == tmp_path / "runs" / "last.pt" and path.is_file()
    loaded = load_checkpoint(path)
    assert loaded["format_version"] == FORMAT_VERSION
    assert loaded["library_version"] == __version__
    assert loaded["loss"] == 1.25 and loaded["epoch"] == 3
    assert torch.equal(loaded["rng"], data["rng"])
    config = ModelConfig.from_dict(loaded["model_config"])
    assert config == CONFIG
    assert Codec.from_dict(loaded["codec"]) == Codec("abc")
    model = build_model(config)
    model.load_state_dict(loaded["model_state"])
    for key, value in data["model_state"].items():
        assert torch.equal(model.state_dict()[key], value)


def test_loads_with_weights_only(tmp_path: Path) -> None:
    path = save_checkpoint(payload(), tmp_path / "best.pt")
    raw = torch.load(path, weights_only=True)  # plain types only: no pickled classes
    assert raw["codec"] == {"charset": "abc", "blank_id": 0}


def test_atomic_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(payload(), path)
    save_checkpoint({**payload(), "loss": 0.5}, path)  # overwrite
    assert sorted(os.listdir(tmp_path)) == ["last.pt"]
    assert load_checkpoint(path)["loss"] == 0.5


def test_failed_save_keeps_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(payload(), path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle this")

    with pytest.raises(RuntimeError, match="cannot pickle"):
        save_checkpoint({**payload(), "loss": Unpicklable()}, path)
    assert sorted(os.listdir(tmp_path)) == ["last.pt"]
    assert load_checkpoint(path)["loss"] == 1.25


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
    path = save_checkpoint(payload(), tmp_path / "last.pt")
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


def test_wrong_format_version(tmp_path: Path) -> None:
    path = save_checkpoint({**payload(), "format_version": FORMAT_VERSION + 1}, tmp_path / "new.pt")
    with pytest.raises(CheckpointError, match=f"format version {FORMAT_VERSION + 1}") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("key", ["model_config", "codec", "model_state", "loss"])
def test_missing_keys(tmp_path: Path, key: str) -> None:
    data = payload()
    del data[key]
    path = save_checkpoint(data, tmp_path / "partial.pt")
    with pytest.raises(CheckpointError, match=key) as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_missing_format_version(tmp_path: Path) -> None:
    path = tmp_path / "old.pt"
    data = payload()
    torch.save(data, path)  # saved without save_checkpoint: no format_version
    with pytest.raises(CheckpointError, match="format_version") as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)


def test_checkpoint_error_is_value_error() -> None:
    assert issubclass(CheckpointError, ValueError)
