"""Split a folder of validation pages in two by text, so a bundle is tuned on one half and measured on the other.

Why by text: in a collection such as Copiste d'un jour one writer copied each text, on one or two pages
(``imp_wikitexte_0051_1`` and ``_2``); pages of one text in both halves would measure the tuning on lines
very like those it was chosen on. Texts in sorted order: even-indexed ones tune (``tune/``), odd-indexed
ones report (``report/``). The halves are folders of links to the pages (XML and image).
"""

from __future__ import annotations

import re
from pathlib import Path

#: A page's text (and writer): the file name up to the text number.
_TEXT_ID = re.compile(r"^(.*?\d+)(?:_.*)?$")


def text_of(stem: str) -> str:
    """The text a page belongs to, from its file name (a name without a number is a text of its own)."""
    match = _TEXT_ID.match(stem)
    return match.group(1) if match else stem


def split_by_text(pages: Path, out: Path) -> dict[str, Path]:
    """``out/tune`` and ``out/report``: links to the PAGE/ALTO pages of alternate texts of ``pages``."""
    texts: dict[str, list[Path]] = {}
    for xml in sorted(pages.glob("*.xml")):
        texts.setdefault(text_of(xml.stem), []).append(xml)
    if not texts:
        raise ValueError(f"no PAGE/ALTO pages (*.xml) in {pages}")
    halves = {"tune": out / "tune", "report": out / "report"}
    for folder in halves.values():
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    for i, key in enumerate(sorted(texts)):
        target = halves["tune" if i % 2 == 0 else "report"]
        for xml in texts[key]:
            for path in [xml, *(p for p in pages.glob(f"{xml.stem}.*") if p.suffix != ".xml")]:
                (target / path.name).symlink_to(path.resolve())
    return halves
