"""Where the served model comes from: its version, licence and training data, for ``/v1/model``
and every prediction.

One function, :func:`read_provenance`, reads them from the checkpoint's metadata and, when a
``MODEL_CARD.md`` next to the checkpoint describes that file (as the bundled ``default.pt``'s
card does), the card's licence paragraph and training-data row, which are the authoritative text
(the bundled IAM model is for non-commercial research only, and clients must be able to see it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

MODEL_CARD = "MODEL_CARD.md"


@dataclass(frozen=True)
class Provenance:
    version: str  # the checkpoint's declared version, else "<file stem>-<sha256[:12]>"
    sha256: str
    library_version: str | None
    licence: str | None
    training_data: str | None
    model_card: str | None  # the card's file name when one describes this checkpoint


def read_provenance(path: Path, payload_metadata: dict, library_version: str | None) -> Provenance:
    """Provenance of the checkpoint at ``path`` whose ``metadata`` dict the loader returned."""
    sha = file_sha256(path)
    card = _card_for(path)
    licence = _licence_paragraph(card) if card else None
    data = _table_row(card, "Training data") if card else None
    version = payload_metadata.get("version") or f"{path.stem}-{sha[:12]}"
    return Provenance(
        version=str(version),
        sha256=sha,
        library_version=library_version,
        licence=licence or _text(payload_metadata.get("licence")),
        training_data=data or _text(payload_metadata.get("data")),
        model_card=MODEL_CARD if card else None,
    )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _card_for(checkpoint: Path) -> str | None:
    """The model card beside ``checkpoint`` if its title names that file (`` `default.pt` ``)."""
    card = checkpoint.parent / MODEL_CARD
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8")
    title = text.lstrip().splitlines()[0] if text.strip() else ""
    return text if f"`{checkpoint.name}`" in title else None


def _licence_paragraph(card: str) -> str | None:
    """The text of the card's paragraph that starts with ``Licence:``, joined into one line."""
    for paragraph in card.split("\n\n"):
        if paragraph.lstrip().lower().startswith(("licence:", "license:")):
            text = " ".join(line.strip() for line in paragraph.strip().splitlines())
            return text.split(":", 1)[1].strip().replace("**", "")
    return None


def _table_row(card: str, name: str) -> str | None:
    """The second cell of the card's table row whose first cell is ``name``."""
    for line in card.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] == name:
            return cells[1].replace("`", "")
    return None


def _text(value) -> str | None:
    if value is None:
        return None
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
