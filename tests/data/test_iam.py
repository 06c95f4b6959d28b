"""IAM: fake archives in the real layouts -> processed folders; splits, writers, caching, download."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.data.fakes import http_server, make_iam_archives, sha256, write_metadata
from text_recognizer.data import iam
from text_recognizer.data.download import ChecksumError, DownloadError
from text_recognizer.data.folder import read_labels
from text_recognizer.data.iam import parse_lines_txt, prepare_iam, preprocess_line

DEV_COPY = Path(__file__).resolve().parents[3] / "shared" / "data" / "iam"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> Path:
    return make_iam_archives(tmp_path_factory.mktemp("iam_archives"))


def test_parse_lines_txt() -> None:
    lines = parse_lines_txt("# comment\na01-000u-00 ok 154 19 408 746 1661 89 A|MOVE|to|stop|Mr.|Gaitskell|from\n")
    line = lines["a01-000u-00"]
    assert (line.ok, line.threshold, line.text, line.form) == (
        "ok",
        154,
        "A MOVE to stop Mr. Gaitskell from",
        "a01-000u",
    )
    with pytest.raises(ValueError, match="lines.txt:1"):
        parse_lines_txt("a01 ok x")


def test_preprocess_line_cleans_paper_keeps_grey_ink() -> None:
    a = np.full((100, 300), 230, np.uint8)
    a[40:60, 50:250] = 60
    out = preprocess_line(Image.fromarray(a), threshold=180, height=64)
    arr = np.asarray(out)
    assert out.size == (192, 64) and out.mode == "L"
    assert arr[0, 0] == 255 and 50 <= arr[32, 96] <= 70  # paper to white, ink stays grey
    assert np.asarray(preprocess_line(Image.fromarray(a), 180, 64, binarize=True))[32, 96] == 0


def test_prepare_from_local_archives(archives: Path, cache: Path) -> None:
    with pytest.raises(ChecksumError, match="no sha256"):  # the IAM checksums are not known: must be waived
        prepare_iam(archives, progress=False)
    folders = prepare_iam(archives, allow_unverified=True, progress=False)
    assert set(folders) == {"train", "val", "test", "train_extra"}
    ids = {name: sorted(r.path.stem for r in read_labels(path)) for name, path in folders.items()}
    assert ids["train"] == ["a01-000u-00", "a01-000u-01", "a01-000u-02"]
    assert ids["val"] == ["a01-003-00", "b02-010-00"]  # validationset1 + validationset2
    assert ids["test"] == ["b02-010-01"]
    assert ids["train_extra"] == ["c03-020-00", "d04-030-00"]  # e05-040 is by a val writer
    texts = {r.path.stem: r.text for r in read_labels(folders["val"])}
    assert texts["a01-003-00"] == 'Leeds , Ontario : " it \'s fine " .'  # IAM tokenisation kept on disk
    header = (folders["train"] / "labels.tsv").read_text().splitlines()[0].split("\t")
    assert header == ["file", "text", "iam_id", "ok_flag", "width", "height"]
    image = Image.open(folders["train"] / "a01-000u-00.png")
    assert image.mode == "L" and image.height == 64
    assert folders["train"].is_relative_to(cache)


def test_cached_after_first_run(archives: Path, cache: Path, monkeypatch) -> None:
    first = prepare_iam(archives, allow_unverified=True, progress=False)
    monkeypatch.setattr(iam, "fetch", lambda *a, **k: pytest.fail("processed data should be reused"))
    assert prepare_iam(None, progress=False) == first


def test_download_from_metadata(archives: Path, cache: Path, tmp_path: Path, monkeypatch) -> None:
    with http_server(archives) as (url, hits):
        names = {
            "lines": "lines.tgz",
            "ascii": "ascii.tgz",
            "splits": "largeWriterIndependentTextLineRecognitionTask.zip",
        }
        meta = write_metadata(
            tmp_path / "meta.toml", {k: (f, f"{url}/{f}", sha256(archives / f)) for k, f in names.items()}
        )
        monkeypatch.setattr(iam, "metadata_path", lambda name: meta)
        folders = prepare_iam(progress=False)
        assert sorted(hits) == sorted(f"/{f}" for f in names.values())
    assert len(read_labels(folders["train"])) == 3
    assert (cache / "downloads" / "iam" / "lines.tgz").is_file()


def test_missing_archives_message(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(DownloadError, match="registration"):
        prepare_iam(tmp_path / "empty", allow_unverified=True, progress=False)


def test_run_experiment_data_iam(archives: Path, cache: Path) -> None:
    from text_recognizer.codec import Codec
    from text_recognizer.models.config import ModelConfig
    from training.loop.config import DataConfig
    from training.loop.data import build_datasets

    config = DataConfig(data=("iam",), iam_archives=str(archives), allow_unverified=True, iam_train_extra=True)
    datasets = build_datasets(config, Codec(), ModelConfig(), seed=0)
    assert (
        len(datasets.train) + sum(r.num_skipped for k, r in datasets.reports.items() if not k.startswith("val:")) == 5
    )
    from text_recognizer.data.lines import MappedLines

    assert isinstance(datasets.train.lines, MappedLines) and not isinstance(datasets.val.lines, MappedLines)
    val_texts = [text for _, text in datasets.val.lines]
    assert 'Leeds, Ontario: "it\'s fine".' in val_texts  # detokenised at load time
    plain = build_datasets(DataConfig(data=("iam",), augment=False, detokenize=False), Codec(), ModelConfig(), seed=0)
    assert not isinstance(plain.train.lines, MappedLines)
    assert 'Leeds , Ontario : " it \'s fine " .' in [t for _, t in plain.val.lines]


@pytest.mark.skipif(not (DEV_COPY / "val" / "labels.tsv").is_file(), reason="development copy not present")
def test_dev_copy_is_a_plain_folder() -> None:
    records = read_labels(DEV_COPY / "val")
    assert len(records) == 1840
