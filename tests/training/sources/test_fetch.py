"""Fetching a source at its pinned commit, from a bare git directory, a checkout or a tarball."""

from __future__ import annotations

import json
import subprocess

import pytest

from training.sources.fetch import RECORD, FetchError, fetch_source
from training.sources.manifest import load_sources


def source(tiny_repo):
    return load_sources(tiny_repo["manifests"])[0]


def test_bare_git_gives_the_pinned_commit_only_the_included_files(tiny_repo, tmp_path):
    fetched = fetch_source(source(tiny_repo), tmp_path, tiny_repo["bare"])
    assert sorted(fetched.files) == sorted(f"data/letters-{d}/f{n}.{e}" for d in "ab" for n in (1, 2)
                                           for e in ("png", "xml"))
    assert fetched.missing == []
    text = (tmp_path / "raw" / "tiny" / "data" / "letters-a" / "f1.xml").read_text(encoding="utf-8")
    assert text.startswith("<?xml")  # the pinned version, not the later commit's "changed later"
    record = json.loads((tmp_path / "raw" / "tiny" / RECORD).read_text(encoding="utf-8"))
    assert record["commit"] == tiny_repo["commit"] and len(record["xml_sha256"]) == 64


def test_three_origins_give_the_same_transcriptions(tiny_repo, tmp_path):
    digests = {fetch_source(source(tiny_repo), tmp_path / kind, tiny_repo[kind]).xml_sha256
               for kind in ("bare", "tarball")}
    subprocess.run(["git", "-C", str(tiny_repo["work"]), "checkout", "-q", tiny_repo["commit"]], check=True)
    try:
        digests.add(fetch_source(source(tiny_repo), tmp_path / "work", tiny_repo["work"]).xml_sha256)
    finally:
        subprocess.run(["git", "-C", str(tiny_repo["work"]), "checkout", "-q", "-"], check=True)
    assert len(digests) == 1


def test_a_second_fetch_is_skipped_and_force_fetches_again(tiny_repo, tmp_path):
    assert not fetch_source(source(tiny_repo), tmp_path, tiny_repo["bare"]).skipped
    assert fetch_source(source(tiny_repo), tmp_path, tiny_repo["bare"]).skipped
    assert not fetch_source(source(tiny_repo), tmp_path, tiny_repo["bare"], force=True).skipped


def test_a_snapshot_missing_a_blob_counts_it_and_goes_on(tiny_repo, tmp_path):
    broken = tmp_path / "broken.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(tiny_repo["bare"]), str(broken)], check=True)
    subprocess.run(["git", "-C", str(broken), "repack", "-a", "-d", "-q"], check=True)
    spec = f"{tiny_repo['commit']}:data/letters-b/f2.png"
    blob = subprocess.run(["git", "--git-dir", str(broken), "rev-parse", spec],
                          check=True, capture_output=True, text=True).stdout.strip()
    # a snapshot without one large blob: rewrite the pack without it
    kept = subprocess.run(["git", "--git-dir", str(broken), "rev-list", "--objects", "--all"], check=True,
                          capture_output=True, text=True).stdout.split("\n")
    wanted = "\n".join(row.split(" ")[0] for row in kept if row and not row.startswith(blob)) + "\n"
    packs = broken / "objects" / "pack"
    for old in packs.iterdir():
        old.unlink()
    subprocess.run(["git", "--git-dir", str(tiny_repo["bare"]), "pack-objects", "-q", str(packs / "pack")],
                   input=wanted, text=True, check=True)
    fetched = fetch_source(source(tiny_repo), tmp_path / "out", broken)
    assert fetched.missing == ["data/letters-b/f2.png"]
    assert len(fetched.files) == 7


def test_wrong_commit_and_bad_origins_are_clear(tiny_repo, tmp_path):
    import dataclasses

    other = dataclasses.replace(source(tiny_repo), commit="f" * 40)
    with pytest.raises(FetchError, match="is not there"):
        fetch_source(other, tmp_path, tiny_repo["bare"])
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(FetchError, match="not a readable tar"):
        fetch_source(source(tiny_repo), tmp_path, bad)
    nothing = dataclasses.replace(source(tiny_repo), include=("nothing/*",))
    with pytest.raises(FetchError, match="matches the manifest's include"):
        fetch_source(nothing, tmp_path, tiny_repo["bare"])
    assert not (tmp_path / "raw" / "tiny").exists()  # nothing half-written
