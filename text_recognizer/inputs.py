"""Turn command-line inputs (files, folders, glob patterns) into the list of image files to read.

Why a module of its own: the recognizer CLI, the PAGE-XML transcriber and the evaluation script all
take "some images" from a user, and they should agree on what a folder or ``*.png`` means. Problems
(a path that does not exist, a pattern that matches nothing) are returned, not raised, so one typo
among many inputs does not stop the others from being read.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

_GLOB_CHARACTERS = set("*?[")


def image_extensions() -> frozenset[str]:
    """Lower-case file suffixes Pillow can open (``.png``, ``.jpg``, ``.tif``, ...)."""
    return frozenset(Image.registered_extensions())


@dataclass
class ResolvedInputs:
    """The files an input list names, in order without duplicates, and ``(input, reason)`` problems."""

    files: list[Path] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _folder_files(folder: Path, recursive: bool, suffixes: frozenset[str]) -> list[Path]:
    pattern = "**/*" if recursive else "*"
    return sorted(p for p in folder.glob(pattern) if p.is_file() and p.suffix.lower() in suffixes)


def resolve_inputs(inputs: Sequence[str | Path], recursive: bool = False,
                   suffixes: frozenset[str] | None = None) -> ResolvedInputs:
    """Expand ``inputs`` into files.

    - a file is taken as it is, whatever its suffix (the reader will say if it is not an image);
    - a folder contributes its files whose suffix is in ``suffixes`` (default: the image types
      Pillow knows), sorted by name; subfolders too with ``recursive``;
    - a pattern with ``*``, ``?`` or ``[`` that is not itself an existing path is expanded with
      :func:`glob.glob` (``**`` crosses folders); it keeps the files it matches, sorted.
    """
    if isinstance(inputs, (str, Path)):
        raise TypeError(f"inputs must be a sequence of paths or patterns, got a single {type(inputs).__name__}")
    suffixes = image_extensions() if suffixes is None else frozenset(s.lower() for s in suffixes)
    resolved = ResolvedInputs()
    seen: set[Path] = set()

    def add(paths: list[Path]) -> None:
        for path in paths:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                resolved.files.append(path)

    for item in inputs:
        text = str(item)
        path = Path(text)
        if path.is_dir():
            found = _folder_files(path, recursive, suffixes)
            if not found:
                hint = "" if recursive else " (--recursive looks in subfolders)"
                resolved.problems.append((text, "folder holds no image files" + hint))
            add(found)
        elif path.exists():
            add([path])
        elif _GLOB_CHARACTERS & set(text):
            found = sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file())
            if not found:
                resolved.problems.append((text, "pattern matches no files"))
            add(found)
        else:
            resolved.problems.append((text, "no such file or folder"))
    return resolved
