"""Bring a source's files at its pinned commit into ``<root>/raw/<name>/``, and say what came and what did not.

Why: the same commit must give the same training lines on every machine. Three ways in, one result:

- from GitHub (a user with internet): the commit's tarball from ``codeload.github.com``, streamed to disk and
  unpacked with :mod:`tarfile`'s ``data`` filter (no links out of the folder, no device files);
- ``--from DIR`` a bare git directory (a mirror, or ``git clone --bare``): each file read at the pinned commit with
  ``git cat-file``, so a snapshot that lost some large blobs still gives every page it has (the missing ones are
  listed and counted, never a crash);
- ``--from DIR`` a plain checkout, or ``--from FILE.tar.gz`` an archive someone downloaded by hand.

Only the files the manifest's ``include`` globs name are kept (``exclude`` removes some). ``FETCHED.json`` records the
commit, the files, the missing ones and a digest of the XML files: a second fetch of the same commit is skipped, and
``prepare`` refuses a folder fetched at another commit than the manifest's.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from training.sources.manifest import Source

RECORD = "FETCHED.json"


class FetchError(RuntimeError):
    """A source could not be fetched: no such commit, no network, nothing matched its globs."""


@dataclass
class Fetched:
    """What a fetch wrote: the folder, its files (repository paths), the missing ones, the XML digest."""

    folder: Path
    commit: str
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    xml_sha256: str = ""
    skipped: bool = False  # already there at this commit


def wanted(path: str, source: Source) -> bool:
    """Does the manifest's ``include`` (and not its ``exclude``) name this repository path?"""
    return any(fnmatch.fnmatchcase(path, g) for g in source.include) and not any(
        fnmatch.fnmatchcase(path, g) for g in source.exclude)


def raw_folder(root: Path, source: Source) -> Path:
    return root / "raw" / source.name


def read_record(folder: Path) -> dict | None:
    try:
        return json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def fetch_source(source: Source, root: Path, origin: str | Path | None = None, force: bool = False) -> Fetched:
    """Fetch ``source`` into ``<root>/raw/<name>/`` from GitHub, or from ``origin`` (bare git dir, checkout, tarball).

    Writes into a temporary folder beside the target and renames it at the end, so an interrupted fetch leaves
    nothing half-written behind.
    """
    target = raw_folder(root, source)
    record = read_record(target)
    if record and record.get("commit") == source.commit and not force:
        return Fetched(target, source.commit, record["files"], record["missing"], record["xml_sha256"], skipped=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{source.name}-"))
    try:
        if origin is None:
            fetched = _from_github(source, work)
        else:
            origin = Path(origin)
            if origin.is_file():
                fetched = _from_tarball(source, origin, work)
            elif (origin / "objects").is_dir() and (origin / "HEAD").is_file():
                fetched = _from_bare_git(source, origin, work)
            elif origin.is_dir():
                fetched = _from_checkout(source, origin, work)
            else:
                raise FetchError(f"--from {origin}: not a file or a folder")
        if not fetched.files:
            raise FetchError(f"{source.name}: no file of {source.repository}@{source.commit[:8]} matches the "
                             f"manifest's include globs {list(source.include)}")
        fetched.xml_sha256 = _xml_digest(work, fetched.files)
        (work / RECORD).write_text(json.dumps({
            "source": source.name, "repository": source.repository, "commit": source.commit,
            "files": fetched.files, "missing": fetched.missing, "xml_sha256": fetched.xml_sha256,
        }, ensure_ascii=False, indent=1), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fetched.folder = target
    return fetched


def _xml_digest(folder: Path, files: list[str]) -> str:
    """SHA-256 over the fetched XML files' paths and bytes, in path order (the transcriptions' fingerprint)."""
    digest = hashlib.sha256()
    for name in sorted(f for f in files if f.lower().endswith(".xml")):
        digest.update(name.encode("utf-8") + b"\0" + (folder / name).read_bytes())
    return digest.hexdigest()


def _safe_destination(work: Path, name: str) -> Path:
    destination = (work / name).resolve()
    if not destination.is_relative_to(work.resolve()):
        raise FetchError(f"refusing a path that leaves the source folder: {name!r}")
    destination.parent.mkdir(parents=True, exist_ok=True)
    return destination


def _git(git_dir: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False, **kwargs)


def _from_bare_git(source: Source, git_dir: Path, work: Path) -> Fetched:
    listing = _git(git_dir, "-c", "core.quotePath=false", "ls-tree", "-r", "-z", source.commit)
    if listing.returncode != 0:
        raise FetchError(f"{git_dir}: commit {source.commit} of {source.repository} is not there "
                         f"({listing.stderr.decode(errors='replace').strip()})")
    entries = []
    for row in listing.stdout.decode("utf-8").split("\0"):
        if not row:
            continue
        meta, path = row.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and wanted(path, source):
            entries.append((path, blob))
    fetched = Fetched(work, source.commit)
    batch = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    assert batch.stdin is not None and batch.stdout is not None
    try:
        for path, blob in entries:
            batch.stdin.write(blob.encode() + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline().decode().split()
            if len(header) < 2 or header[1] == "missing":
                fetched.missing.append(path)
                continue
            size = int(header[2])
            data = batch.stdout.read(size)
            batch.stdout.read(1)  # the newline after each object
            _safe_destination(work, path).write_bytes(data)
            fetched.files.append(path)
    finally:
        batch.stdin.close()
        batch.wait()
    return fetched


def _from_checkout(source: Source, folder: Path, work: Path) -> Fetched:
    fetched = Fetched(work, source.commit)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        name = path.relative_to(folder).as_posix()
        if wanted(name, source):
            shutil.copyfile(path, _safe_destination(work, name))
            fetched.files.append(name)
    return fetched


def _from_tarball(source: Source, archive: Path, work: Path) -> Fetched:
    """GitHub's tarballs put every file under one top folder (``<repo>-<commit>/``): it is stripped."""
    fetched = Fetched(work, source.commit)
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                if not member.isfile():
                    continue
                name = member.name.split("/", 1)[1] if "/" in member.name else member.name
                if not wanted(name, source):
                    continue
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                with handle:
                    _safe_destination(work, name).write_bytes(handle.read())
                fetched.files.append(name)
    except tarfile.TarError as error:
        raise FetchError(f"{archive}: not a readable tar archive ({error})") from error
    fetched.files.sort()
    return fetched


def _from_github(source: Source, work: Path, timeout: float = 60.0) -> Fetched:
    download = work / ".archive.tar.gz"
    request = urllib.request.Request(source.archive_url, headers={"User-Agent": "text-recognizer-data"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, download.open("wb") as out:
            shutil.copyfileobj(response, out, length=1 << 20)
    except OSError as error:
        raise FetchError(f"could not download {source.archive_url} ({error}); without internet, fetch the "
                         f"repository some other way and give it with --from DIR") from error
    try:
        return _from_tarball(source, download, work)
    finally:
        download.unlink(missing_ok=True)
