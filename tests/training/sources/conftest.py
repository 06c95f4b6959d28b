"""A tiny source made by the test: two documents of ALTO pages (drawn handwriting) in a real git repository."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.data.layout_pages import alto_xml, draw_page, page_xml, points
from tests.training.sources.tiny import MANIFEST

LABELS = ("M^r Baudelot >au< le 1^er", "trouverés [?] vous bon", "\u017foeur \u204a cousine")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def write_pages(repo: Path) -> None:
    """Two manuscripts (folders) of two ALTO pages each, a PAGE copy that the manifest does not include, a note."""
    for document in ("letters-a", "letters-b"):
        for number in (1, 2):
            folder = repo / "data" / document
            folder.mkdir(parents=True, exist_ok=True)
            seed = number + 10 * (document == "letters-b")
            page, drawn = draw_page(texts=("hello world", "seven cats", "move the tables"), seed=seed)
            stem = f"f{number}"
            page.save(folder / f"{stem}.png")
            lines = [{"id": f"l{i}", "text": label, "polygon": d.polygon, "baseline": points(d.baseline)}
                     for i, (label, d) in enumerate(zip(LABELS, drawn))]
            (folder / f"{stem}.xml").write_text(alto_xml(f"{stem}.png", page.size, lines), encoding="utf-8")
            copy = [{"id": "p0", "text": "x", "points": points(drawn[0].polygon)}]
            (folder / "page").mkdir(exist_ok=True)
            (folder / "page" / f"{stem}.xml").write_text(page_xml(f"../{stem}.png", page.size, copy), encoding="utf-8")
    (repo / "README.md").write_text("tiny\n", encoding="utf-8")




@pytest.fixture(scope="session")
def tiny_repo(tmp_path_factory) -> dict:
    """A checkout, its bare clone, a GitHub-style tarball of the commit, and the manifest folder pinning it."""
    root = tmp_path_factory.mktemp("tiny-source")
    work = root / "tiny-gt"
    work.mkdir()
    git(work, "init", "-q")
    git(work, "config", "user.email", "t@example.org")
    git(work, "config", "user.name", "t")
    write_pages(work)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "pages")
    commit = git(work, "rev-parse", "HEAD")
    (work / "data" / "letters-a" / "f1.xml").write_text("changed later", encoding="utf-8")  # not at the pin
    git(work, "commit", "-q", "-am", "later")
    bare = root / "tiny-gt.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    tarball = root / "tiny.tar.gz"
    archive = subprocess.run(["git", "-C", str(work), "archive", "--format=tar", f"--prefix=tiny-gt-{commit}/",
                              commit], check=True, capture_output=True).stdout
    raw_tar = root / "tiny.tar"
    raw_tar.write_bytes(archive)
    with tarfile.open(tarball, "w:gz") as out, tarfile.open(raw_tar) as src:
        for member in src:
            out.addfile(member, src.extractfile(member) if member.isfile() else None)
    manifests = root / "manifests"
    manifests.mkdir()
    (manifests / "tiny.toml").write_text(MANIFEST.format(commit=commit), encoding="utf-8")
    return {"work": work, "bare": bare, "tarball": tarball, "manifests": manifests, "commit": commit}
