"""Checkpoints: plain types only, so ``torch.load(path, weights_only=True)`` always works.

A checkpoint holds everything needed to rebuild the model, the codec and the stem
(``model_config`` carries the input height), plus, for ``last.pt``, the training state needed to
resume exactly (optimiser, scheduler, epoch, step, RNG states).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from text_recognizer import __version__

FORMAT_VERSION = 1
REQUIRED_KEYS = ("format_version", "model_config", "codec", "model_state", "loss")


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable or from an incompatible version."""


def save_checkpoint(payload: dict, path: str | Path) -> Path:
    """Write atomically (temporary file + rename), so an interrupted save never corrupts ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format_version": FORMAT_VERSION, "library_version": __version__, **payload}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it owner-only; use the normal file mode
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict:
    """Load and sanity-check a checkpoint, raising ``CheckpointError`` with the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # torch raises many types for corrupt files
        raise CheckpointError(f"checkpoint {path} could not be read (corrupt or not a checkpoint): {error}") from error
    if not isinstance(payload, dict):
        raise CheckpointError(f"checkpoint {path} does not hold a dict but {type(payload).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {missing}: not a text_recognizer checkpoint")
    if payload["format_version"] != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {payload['format_version']}, "
            f"this version of text_recognizer ({__version__}) reads version {FORMAT_VERSION}"
        )
    return payload
