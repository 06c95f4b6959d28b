"""EMNIST from a fake matlab.zip (real .mat struct layout) and EMNIST Lines built from it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.data.fakes import EMNIST_CHARS, fake_emnist_images, http_server, make_emnist_zip, sha256, write_metadata
from text_recognizer.data import emnist, emnist_lines
from text_recognizer.data.download import ChecksumError
from text_recognizer.data.emnist import load_emnist, mapping_from_mat, prepare_emnist
from text_recognizer.data.emnist_lines import EmnistLinesConfig, prepare_emnist_lines, render_emnist_line
from text_recognizer.data.folder import read_labels

SMALL = EmnistLinesConfig(num_train=12, num_val=4, num_test=4, max_chars=20, seed=3)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def matlab_zip(tmp_path_factory) -> Path:
    return make_emnist_zip(tmp_path_factory.mktemp("emnist"))


@pytest.fixture()
def metadata(matlab_zip: Path, tmp_path: Path, monkeypatch):
    """Point the EMNIST metadata at a local HTTP server holding the fake archive."""
    with http_server(matlab_zip.parent) as (url, hits):
        meta = write_metadata(
            tmp_path / "meta.toml", {"matlab": ("matlab.zip", f"{url}/matlab.zip", sha256(matlab_zip))}
        )
        monkeypatch.setattr(emnist, "metadata_path", lambda name: meta)
        yield hits


def test_mapping() -> None:
    assert mapping_from_mat(np.array([[1, 66], [0, 65]])) == "AB"
    with pytest.raises(ValueError, match="0..1"):
        mapping_from_mat(np.array([[0, 65], [2, 66]]))


def test_download_process_and_cache(metadata, cache: Path) -> None:
    train = load_emnist("train")
    assert train.mapping == EMNIST_CHARS and len(train) == 3 * 62
    assert train.images.shape == (186, 28, 28) and train.images.dtype == np.uint8
    np.testing.assert_array_equal(train.images, fake_emnist_images(train.labels))  # upright (column-major read)
    image, char = train[5]
    assert isinstance(image, Image.Image) and char == "1"
    assert np.asarray(image)[0, 0] == 255 and np.asarray(image)[2, 10] == 0  # dark ink on light paper
    assert load_emnist("test").mapping == EMNIST_CHARS
    assert metadata == ["/matlab.zip"]  # downloaded once, then the processed npz is reused
    with pytest.raises(ValueError, match="split"):
        load_emnist("val")


def test_bad_checksum(matlab_zip: Path, cache: Path, tmp_path: Path, monkeypatch) -> None:
    meta = write_metadata(tmp_path / "meta.toml", {"matlab": ("matlab.zip", "http://127.0.0.1:9/x", "3" * 64)})
    monkeypatch.setattr(emnist, "metadata_path", lambda name: meta)
    with pytest.raises(ChecksumError, match="mismatch"):
        prepare_emnist(matlab_zip)


def test_render_line_overlap() -> None:
    chars = emnist.EMNIST(fake_emnist_images(np.arange(62)), np.arange(62), EMNIST_CHARS)
    by_char = chars.indices_by_char()
    rng = np.random.default_rng(0)
    no_overlap = render_emnist_line("ab c", chars, by_char, rng, max_overlap=0.0, height=32)
    assert no_overlap.size == (4 * 28 + 4, 32)
    overlapping = render_emnist_line("ab c", chars, by_char, np.random.default_rng(1), max_overlap=0.5, height=32)
    assert overlapping.width < no_overlap.width
    with pytest.raises(ValueError, match="no image"):
        render_emnist_line("a,b", chars, by_char, rng)


def test_emnist_lines(metadata, cache: Path, monkeypatch) -> None:
    folders = prepare_emnist_lines(SMALL)
    assert set(folders) == {"train", "val", "test"}
    records = read_labels(folders["train"])
    assert len(records) == 12 and len(read_labels(folders["val"])) == 4
    for record in records:
        assert record.text and set(record.text) <= set(EMNIST_CHARS + " ") and len(record.text) <= 20
        image = Image.open(record.path)
        assert image.mode == "L" and image.height == 64
    texts = [r.text for r in records]
    monkeypatch.setattr(emnist_lines, "build_emnist_lines", lambda *a, **k: pytest.fail("should be cached"))
    assert prepare_emnist_lines(SMALL) == folders
    monkeypatch.undo()
    # deterministic per seed: a fresh cache gives the same texts and pixels
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(cache.parent / "cache2"))
    monkeypatch.setattr(emnist, "metadata_path", lambda name: emnist_lines_meta(cache))
    again = prepare_emnist_lines(SMALL, archive=cache / "downloads" / "emnist" / "matlab.zip")
    assert [r.text for r in read_labels(again["train"])] == texts
    assert (again["train"] / "train-000000.png").read_bytes() == (folders["train"] / "train-000000.png").read_bytes()
    other = prepare_emnist_lines(
        EmnistLinesConfig(num_train=12, num_val=4, num_test=4, max_chars=20, seed=4),
        archive=cache / "downloads" / "emnist" / "matlab.zip",
    )
    assert [r.text for r in read_labels(other["train"])] != texts


def emnist_lines_meta(cache: Path) -> Path:
    path = cache / "downloads" / "emnist" / "matlab.zip"
    return write_metadata(cache.parent / "meta2.toml", {"matlab": ("matlab.zip", "http://127.0.0.1:9/x", sha256(path))})
