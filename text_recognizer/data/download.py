"""Downloading and verifying dataset archives, and where processed data is cached.

Every real dataset records its archives in ``text_recognizer/data/metadata/<dataset>.toml`` (package
data, so an installed package can still download and verify them)::

    [files.lines]
    file = "lines.tgz"
    url = "https://..."
    sha256 = "..."          # "" where not known: then the download needs allow_unverified

``fetch`` returns a verified local copy of one archive: an archive the user already has (a path
given with ``local=``, or a file of the same name in ``search_dirs``) is checked and used in place;
otherwise it is downloaded with ``urllib`` into ``<cache>/downloads/<name>.part`` and renamed only
once it is complete and its sha256 matches, so an interrupted or corrupt download never looks like
a finished one. A file already in the cache is re-verified and reused.

The cache root is ``$TEXT_RECOGNIZER_DATA`` if set, else ``~/.cache/text_recognizer``.
Checksums are never skipped silently: an empty ``sha256`` is refused unless ``allow_unverified`` is
true (or ``TEXT_RECOGNIZER_ALLOW_UNVERIFIED=1``); the actual digest is then printed so that it can be
recorded in the metadata file.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DownloadError", "ChecksumError", "RemoteFile", "cache_dir", "load_metadata", "sha256_file", "fetch",
    "metadata_path",
]

ENV_CACHE = "TEXT_RECOGNIZER_DATA"
ENV_ALLOW_UNVERIFIED = "TEXT_RECOGNIZER_ALLOW_UNVERIFIED"
_CHUNK = 1 << 20
_METADATA_DIR = Path(__file__).resolve().parent / "metadata"


class DownloadError(OSError):
    """A download failed, was incomplete, or an archive could not be found."""


class ChecksumError(DownloadError):
    """A file's sha256 is not the recorded one, or no checksum is recorded and none was waived."""


@dataclass(frozen=True)
class RemoteFile:
    """One archive of a dataset: its file name, where to get it, and its sha256 (hex, or "")."""

    name: str
    url: str
    sha256: str = ""
    mirrors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or "\\" in self.name:
            raise ValueError(f"file name must be a plain file name, got {self.name!r}")
        digest = self.sha256.strip().lower()
        if digest and (len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest)):
            raise ValueError(f"sha256 of {self.name} must be 64 hex digits or empty, got {self.sha256!r}")
        object.__setattr__(self, "sha256", digest)


def cache_dir(*parts: str) -> Path:
    """``$TEXT_RECOGNIZER_DATA`` (or ``~/.cache/text_recognizer``) joined with ``parts``."""
    root = os.environ.get(ENV_CACHE) or str(Path.home() / ".cache" / "text_recognizer")
    return Path(root).expanduser().joinpath(*parts)


def metadata_path(dataset: str) -> Path:
    """``text_recognizer/data/metadata/<dataset>.toml``: where the dataset's archives come from."""
    return _METADATA_DIR / f"{dataset}.toml"


def load_metadata(path: str | Path) -> dict[str, RemoteFile]:
    """The ``[files.<key>]`` tables of a metadata.toml as ``{key: RemoteFile}``."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ValueError(f"metadata file {path} does not exist") from error
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"metadata file {path} is not valid TOML: {error}") from error
    files = data.get("files")
    if not isinstance(files, dict) or not files:
        raise ValueError(f"metadata file {path} needs [files.<key>] tables with file, url and sha256")
    out = {}
    for key, entry in files.items():
        missing = [k for k in ("file", "url", "sha256") if k not in entry]
        if missing:
            raise ValueError(f"{path}: [files.{key}] lacks {missing}")
        out[key] = RemoteFile(entry["file"], entry["url"], entry["sha256"], tuple(entry.get("mirrors", ())))
    return out


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _allow_unverified(flag: bool) -> bool:
    return flag or os.environ.get(ENV_ALLOW_UNVERIFIED, "").strip().lower() in ("1", "true", "yes")


def _verify(path: Path, remote: RemoteFile, allow_unverified: bool, source: str) -> None:
    actual = sha256_file(path)
    if remote.sha256:
        if actual != remote.sha256:
            raise ChecksumError(
                f"{source} {path}: sha256 mismatch for {remote.name}: expected {remote.sha256}, got {actual} "
                "(a corrupt or different file; delete it and try again)"
            )
    elif allow_unverified:
        print(f"warning: {remote.name} has no recorded sha256; accepted unverified, its sha256 is {actual}",
              file=sys.stderr)
    else:  # pragma: no cover - guarded before we get here
        raise ChecksumError(_no_checksum_message(remote))


def _no_checksum_message(remote: RemoteFile) -> str:
    return (
        f"no sha256 is recorded for {remote.name}, so it cannot be verified; pass allow_unverified=True "
        f"(--allow-unverified) or set {ENV_ALLOW_UNVERIFIED}=1 to accept it anyway, and record the "
        "printed sha256 in the dataset's metadata.toml"
    )


def _download(url: str, part: Path, timeout: float, progress: bool) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "text_recognizer"})
    received = 0
    expected: int | None = None
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, open(part, "wb") as out:
            length = response.headers.get("Content-Length")
            expected = int(length) if length and length.isdigit() else None
            while True:
                try:
                    chunk = response.read(_CHUNK)
                except http.client.IncompleteRead as error:
                    out.write(error.partial)
                    received += len(error.partial)
                    break
                if not chunk:
                    break
                out.write(chunk)
                received += len(chunk)
                if progress and expected:
                    print(f"\r  {received / 1e6:.1f} / {expected / 1e6:.1f} MB", end="", file=sys.stderr)
    except urllib.error.HTTPError as error:
        raise DownloadError(f"download of {url} failed: HTTP {error.code} {error.reason}") from error
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as error:
        raise DownloadError(
            f"download of {url} failed after {received} bytes: {getattr(error, 'reason', error)}; the partial file "
            "was removed, try again"
        ) from error
    finally:
        if progress and expected:
            print(file=sys.stderr)
    if expected is not None and received != expected:
        raise DownloadError(
            f"incomplete download of {url}: got {received} of {expected} bytes (connection closed early); try again"
        )
    if received == 0:
        raise DownloadError(f"download of {url} returned no data")


def fetch(
    remote: RemoteFile,
    dest_dir: str | Path,
    local: str | Path | None = None,
    search_dirs: Iterable[str | Path] = (),
    allow_unverified: bool = False,
    timeout: float = 60.0,
    progress: bool = False,
) -> Path:
    """A verified local copy of ``remote``: a user-given file, a cached one, or a fresh download.

    ``local`` is a path to the archive itself or to a folder holding it; ``search_dirs`` are
    folders where it may already lie under its own name. Local files are verified and used in
    place (not copied). Raises ``ChecksumError`` on a sha256 mismatch (or an unwaived missing
    checksum) and ``DownloadError`` on network errors and incomplete downloads.
    """
    allow = _allow_unverified(allow_unverified)
    candidates: list[tuple[Path, str]] = []
    if local is not None:
        local = Path(local).expanduser()
        path = local / remote.name if local.is_dir() else local
        if not path.is_file():
            raise DownloadError(f"local archive {path} for {remote.name} does not exist")
        candidates.append((path, "local archive"))
    else:
        candidates += [(Path(d).expanduser() / remote.name, "local archive") for d in search_dirs]
    dest_dir = Path(dest_dir)
    target = dest_dir / remote.name
    candidates.append((target, "cached file"))
    if not remote.sha256 and not allow:
        raise ChecksumError(_no_checksum_message(remote))
    for path, source in candidates:
        if path.is_file():
            _verify(path, remote, allow, source)
            return path
    dest_dir.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    errors = []
    for url in (remote.url, *remote.mirrors):
        print(f"downloading {url} -> {target}", file=sys.stderr)
        try:
            _download(url, part, timeout, progress)
            _verify(part, remote, allow, "downloaded file")
        except DownloadError as error:
            part.unlink(missing_ok=True)
            errors.append(error)
            continue
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        os.replace(part, target)
        return target
    if len(errors) == 1:
        raise errors[0]
    raise type(errors[-1])("every source failed:\n  " + "\n  ".join(str(e) for e in errors))

