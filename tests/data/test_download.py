"""Downloader: real HTTP from a local server, checksums, partial downloads, cache reuse, local archives."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.fakes import http_server, sha256, write_metadata
from text_recognizer.data import download
from text_recognizer.data.download import ChecksumError, DownloadError, RemoteFile, cache_dir, fetch, load_metadata


@pytest.fixture()
def served(tmp_path: Path):
    root = tmp_path / "www"
    root.mkdir()
    (root / "data.bin").write_bytes(b"0123456789" * 5000)
    with http_server(root) as (url, hits):
        yield root, url, hits


def test_cache_dir_env(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TEXT_RECOGNIZER_DATA", str(tmp_path / "c"))
    assert cache_dir("iam", "x") == tmp_path / "c" / "iam" / "x"
    monkeypatch.delenv("TEXT_RECOGNIZER_DATA")
    assert cache_dir() == Path.home() / ".cache" / "text_recognizer"


def test_download_verifies_and_reuses_cache(served, tmp_path: Path) -> None:
    root, url, hits = served
    remote = RemoteFile("data.bin", f"{url}/data.bin", sha256(root / "data.bin"))
    path = fetch(remote, tmp_path / "dl")
    assert path == tmp_path / "dl" / "data.bin" and path.read_bytes() == (root / "data.bin").read_bytes()
    assert not (tmp_path / "dl" / "data.bin.part").exists()
    assert fetch(remote, tmp_path / "dl") == path
    assert hits == ["/data.bin"]  # the second call used the cache


def test_checksum_mismatch_leaves_nothing(served, tmp_path: Path) -> None:
    _, url, _ = served
    remote = RemoteFile("data.bin", f"{url}/data.bin", "0" * 64)
    with pytest.raises(ChecksumError, match="sha256 mismatch.*expected 0000"):
        fetch(remote, tmp_path / "dl")
    assert list((tmp_path / "dl").iterdir()) == []


def test_partial_download_is_an_error(served, tmp_path: Path) -> None:
    root, url, _ = served
    remote = RemoteFile("data.bin", f"{url}/partial/data.bin", sha256(root / "data.bin"))
    with pytest.raises(DownloadError, match="incomplete download|failed after") as info:
        fetch(remote, tmp_path / "dl")
    assert not isinstance(info.value, ChecksumError)
    assert list((tmp_path / "dl").iterdir()) == []


def test_http_error_and_mirror_fallback(served, tmp_path: Path) -> None:
    root, url, hits = served
    remote = RemoteFile("data.bin", f"{url}/missing.bin", sha256(root / "data.bin"))
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch(remote, tmp_path / "dl")
    mirrored = RemoteFile("data.bin", f"{url}/missing.bin", sha256(root / "data.bin"), mirrors=(f"{url}/data.bin",))
    assert fetch(mirrored, tmp_path / "dl").is_file()


def test_connection_refused(tmp_path: Path) -> None:
    remote = RemoteFile("x.bin", "http://127.0.0.1:9/x.bin", "a" * 64)
    with pytest.raises(DownloadError, match="failed"):
        fetch(remote, tmp_path / "dl", timeout=5)


def test_empty_checksum_refused_unless_allowed(served, tmp_path: Path, monkeypatch, capsys) -> None:
    root, url, hits = served
    remote = RemoteFile("data.bin", f"{url}/data.bin", "")
    with pytest.raises(ChecksumError, match="no sha256 is recorded.*allow"):
        fetch(remote, tmp_path / "dl")
    assert hits == []  # refused before downloading anything
    path = fetch(remote, tmp_path / "dl", allow_unverified=True)
    assert sha256(root / "data.bin") in capsys.readouterr().err  # printed so that it can be recorded
    monkeypatch.setenv("TEXT_RECOGNIZER_ALLOW_UNVERIFIED", "1")
    assert fetch(remote, tmp_path / "dl") == path


def test_local_archive_used_in_place(tmp_path: Path) -> None:
    local = tmp_path / "mine" / "data.bin"
    local.parent.mkdir()
    local.write_bytes(b"abc")
    remote = RemoteFile("data.bin", "http://127.0.0.1:9/never", sha256(local))
    assert fetch(remote, tmp_path / "dl", local=local) == local
    assert fetch(remote, tmp_path / "dl", local=local.parent) == local  # a folder holding it
    with pytest.raises(ChecksumError):
        fetch(RemoteFile("data.bin", "http://x", "1" * 64), tmp_path / "dl", local=local)
    with pytest.raises(DownloadError, match="does not exist"):
        fetch(remote, tmp_path / "dl", local=tmp_path / "nowhere.bin")


def test_corrupt_cached_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "data.bin").write_bytes(b"truncated")
    with pytest.raises(ChecksumError, match="cached file"):
        fetch(RemoteFile("data.bin", "http://127.0.0.1:9/x", "2" * 64), tmp_path / "dl")


def test_metadata_files(tmp_path: Path) -> None:
    path = write_metadata(tmp_path / "m.toml", {"a": ("a.zip", "https://x/a.zip", "")})
    assert load_metadata(path) == {"a": RemoteFile("a.zip", "https://x/a.zip", "")}
    with pytest.raises(ValueError, match="64 hex"):
        RemoteFile("a.zip", "u", "xyz")
    with pytest.raises(ValueError, match="lacks"):
        (tmp_path / "bad.toml").write_text('[files.a]\nfile = "a"\n')
        load_metadata(tmp_path / "bad.toml")
    for dataset in ("iam", "emnist"):
        files = load_metadata(download.metadata_path(dataset))
        assert files and all(f.url.startswith("https://") for f in files.values())
    assert load_metadata(download.metadata_path("emnist"))["matlab"].sha256
