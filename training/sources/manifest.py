"""A data source's manifest (``data/sources/<name>.toml``): where it lives, what it may be used for, how to read it.

Why: a model is only as open as the data it learned from. Each source states its repository and pinned commit (so
the same files come back every time), its licence and the file that states it (shown in the model card and by
``GET /v1/model``), what it holds (language, centuries, hands, lines) and how the prepare step reads it (which files,
what a document is, the source's own signs). Nothing else in the code names a source.

:data:`FORBIDDEN` lists the collections (and their writers) that measure the project: a manifest that names one of
them is refused here, before anything is downloaded.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

#: The project's evaluation sets, as letters and digits only (lower case, no spaces or punctuation): a manifest whose
#: text, squeezed the same way, contains one of them is refused. Squeezing catches every spelling of a name
#: (``Copiste d'un jour``, ``copiste_dun_jour``, an owner/name with hyphens) with one entry.
FORBIDDEN = (
    "copistedunjour",  # BAnQ's Copiste d'un jour: only the development copy in ../shared/data
    "testaments" "depoilus",  # the wills of First World War soldiers, any copy or edition
    "testamentspoilus",
    "josephhooker",  # the Joseph Hooker correspondence
    "janelathropstanford",  # the Stanford memorials (validation only)
    "washington",  # the Washington letter book (validation only)
    "cremmawikipedia",  # the same texts as Copiste
    "iamhandwriting",  # IAM, only from ../shared/data/iam
    "fkiinfunibech",
)

FORMATS = ("alto", "page")
DOCUMENT_UNITS = ("folder", "page")
OPEN_LICENCES = ("CC-BY-4.0", "CC-BY-SA-4.0", "CC0-1.0", "public-domain", "Etalab-2.0")

#: The repository's folder of manifests, beside ``training/``.
DEFAULT_MANIFEST_DIR = Path(__file__).resolve().parents[2] / "data" / "sources"


class ManifestError(ValueError):
    """A manifest is missing a field, has a wrong value, or names a forbidden source."""


@dataclass(frozen=True)
class Source:
    """One source, as its manifest says. Field meanings: ``docs/transcription.md`` and ``data/README.md``."""

    name: str
    title: str
    repository: str
    commit: str
    licence: str
    licence_stated_in: tuple[str, ...]
    attribution: str
    language: str
    centuries: tuple[int, ...]
    script: str
    hands: str
    kind: str
    format: str
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    document: str = "folder"
    val_fraction: float = 0.1
    val_documents: tuple[str, ...] = ()
    pages: int = 0
    lines: int = 0
    leave_out: tuple[str, ...] = ()
    replace: dict[str, str] = field(default_factory=dict)
    notes: str = ""
    path: Path | None = None

    @property
    def archive_url(self) -> str:
        """GitHub's tarball of the pinned commit (``codeload`` serves any commit of a public repository)."""
        return f"https://codeload.github.com/{self.repository}/tar.gz/{self.commit}"


_REQUIRED = ("name", "title", "repository", "commit", "licence", "licence_stated_in", "attribution", "language",
             "centuries", "script", "hands", "kind", "format", "include")
_TUPLES = ("licence_stated_in", "centuries", "include", "exclude", "val_documents", "leave_out")


def squeezed(text: str) -> str:
    """``text`` in lower case with everything but letters and digits removed (how :data:`FORBIDDEN` is written)."""
    return "".join(c for c in text.lower() if c.isalnum())


def forbidden_name(text: str) -> str | None:
    """The forbidden name that ``text`` contains (any case, spacing or punctuation), or None."""
    flat = squeezed(text)
    return next((name for name in FORBIDDEN if name in flat), None)


def load_source(path: str | Path) -> Source:
    """Read and check one manifest; raise :class:`ManifestError` naming the file and the field."""
    path = Path(path)
    raw_text = path.read_text(encoding="utf-8")
    hit = forbidden_name(raw_text)
    if hit:
        raise ManifestError(f"{path}: names {hit!r}, an evaluation source that must never be fetched or trained on")
    try:
        raw = tomllib.loads(raw_text)
    except tomllib.TOMLDecodeError as error:
        raise ManifestError(f"{path}: not valid TOML: {error}") from error
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise ManifestError(f"{path}: missing {', '.join(missing)}")
    unknown = sorted(set(raw) - {f for f in Source.__dataclass_fields__ if f != "path"})
    if unknown:
        raise ManifestError(f"{path}: unknown field(s) {', '.join(unknown)}")
    values = {key: tuple(value) if key in _TUPLES else value for key, value in raw.items()}
    source = Source(**values, path=path)
    _check(source, path)
    return source


def _check(source: Source, path: Path) -> None:
    if source.name != path.stem:
        raise ManifestError(f"{path}: name {source.name!r} must be the file's stem {path.stem!r}")
    if len(source.commit) != 40 or any(c not in "0123456789abcdef" for c in source.commit):
        raise ManifestError(f"{path}: commit must be 40 lowercase hex digits, got {source.commit!r}")
    if source.repository.count("/") != 1:
        raise ManifestError(f"{path}: repository must be owner/name, got {source.repository!r}")
    if source.format not in FORMATS:
        raise ManifestError(f"{path}: format must be one of {FORMATS}, got {source.format!r}")
    if source.document not in DOCUMENT_UNITS:
        raise ManifestError(f"{path}: document must be one of {DOCUMENT_UNITS}, got {source.document!r}")
    if source.licence not in OPEN_LICENCES:
        raise ManifestError(f"{path}: licence must be one of {OPEN_LICENCES} (a licence we can state), "
                            f"got {source.licence!r}")
    if not 0.0 <= source.val_fraction < 1.0:
        raise ManifestError(f"{path}: val_fraction must be in [0, 1), got {source.val_fraction}")


def load_sources(folder: str | Path = DEFAULT_MANIFEST_DIR, names: list[str] | None = None) -> list[Source]:
    """Every manifest in ``folder`` (sorted by name), or the ``names`` asked for (an unknown name is an error)."""
    folder = Path(folder)
    available = {p.stem: p for p in sorted(folder.glob("*.toml"))}
    if not available:
        raise ManifestError(f"no source manifests (*.toml) in {folder}")
    if names:
        unknown = [n for n in names if n not in available]
        if unknown:
            raise ManifestError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(available)}")
        return [load_source(available[n]) for n in names]
    return [load_source(p) for p in available.values()]
