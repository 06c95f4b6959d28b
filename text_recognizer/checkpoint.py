"""The checkpoint bundle: one typed record, one ``save_checkpoint``, one ``load_checkpoint``.

A :class:`Checkpoint` carries everything a reader needs: the model config (which includes the stem's
input height), the weights, the codec's characters, how to decode the outputs and what spacing they
follow (:class:`Decoding`), where the model came from (:class:`Provenance`), its licence, and the
versions that wrote it. ``last.pt`` adds ``train_state`` (optimiser, scheduler, counters, RNG) so a
run resumes exactly; a bad-step dump adds its batch in ``extra``.

On disk a checkpoint is a dict of plain types and tensors, so ``torch.load(path, weights_only=True)``
always works (format 2)::

    format_version  2
    model_config    ModelConfig.to_dict()
    codec           {"charset": str, "blank_id": 0}
    model_state     {name: tensor}
    decoding        {"output_kind": "ctc" | "per_window", "spacing": "natural" | "as_labelled",
                     "decoder": {...}}      # decoder settings/payloads beyond greedy (e.g. a language model)
    provenance      {"data", "recipe" (the training config), "created", "git_rev", "val_cer", "val_data",
                     "epoch", "step", "model_version", "parent" (a fine-tuned model's origin)}
    licence         str
    versions        {"package": text_recognizer version, "torch": torch version}  # of the writer
    train_state     {...} (only in last.pt)
    extra           {...} (anything else, plain types)

Format 1 (before this module had a bundle) stored the decoding in a top-level ``loss`` key (``"ctc"``
or ``"nll"``), the model card in ``metadata`` and the training config in ``config``; it still loads
(``tests/fixtures/checkpoints/`` keeps one) and is never written.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from text_recognizer import __version__
from text_recognizer.codec import Codec
from text_recognizer.models import ModelConfig, build_model

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)

#: ``ctc``: each frame emits a character or a blank; decoding merges repeats, then drops blanks.
#: ``per_window``: frame k is character k or padding (the per-window cross-entropy baseline,
#: ``--loss nll``); decoding drops padding and keeps repeats.
OUTPUT_KINDS = ("ctc", "per_window")
#: ``natural``: IAM's spaces around punctuation and clitics removed ("Leeds, Ontario", see
#: ``text_recognizer/data/tokenization.py``); ``as_labelled``: whatever spacing the training labels had.
SPACINGS = ("natural", "as_labelled")
#: The training loss that produces each output kind (``--loss``), and back.
OUTPUT_KIND_OF_LOSS = {"ctc": "ctc", "nll": "per_window"}
LOSS_OF_OUTPUT_KIND = {kind: loss for loss, kind in OUTPUT_KIND_OF_LOSS.items()}

_REQUIRED = {
    1: ("model_config", "codec", "model_state", "loss"),
    2: ("model_config", "codec", "model_state", "decoding"),
}
#: Every top-level key a format defines; other keys are kept in ``Checkpoint.extra``.
_KEYS = {
    1: {*_REQUIRED[1], "format_version", "metadata", "config", "library_version", "train_state"},
    2: {*_REQUIRED[2], "format_version", "provenance", "licence", "versions", "train_state", "extra"},
}


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable or from an incompatible version."""


@dataclass(frozen=True)
class Decoding:
    """How to turn the model's outputs into text, and what that text looks like."""

    output_kind: str = "ctc"
    spacing: str = "natural"
    decoder: dict = field(default_factory=dict)  # plain types; {} means greedy decoding

    def __post_init__(self) -> None:
        if self.output_kind not in OUTPUT_KINDS:
            raise ValueError(f"decoding output_kind must be one of {OUTPUT_KINDS}, got {self.output_kind!r}")
        if self.spacing not in SPACINGS:
            raise ValueError(f"decoding spacing must be one of {SPACINGS}, got {self.spacing!r}")

    @property
    def collapse_repeats(self) -> bool:
        """Whether greedy decoding merges repeated frames (CTC) or keeps them (per-window outputs)."""
        return self.output_kind == "ctc"


@dataclass(frozen=True)
class Provenance:
    """Where the weights came from: the model card's facts. Every field is optional."""

    data: str = ""  # training data, in words
    recipe: dict = field(default_factory=dict)  # the training configuration (ExperimentConfig.to_dict())
    created: str = ""  # ISO 8601 time the checkpoint was made
    git_rev: str = ""  # the code's git revision, when known
    val_cer: float | None = None
    val_data: str = ""  # what val_cer was measured on
    epoch: int | None = None
    step: int | None = None
    model_version: str = ""
    #: the model this one was fine-tuned from (``text-recognizer-train --finetune``): its file, sha256, version,
    #: data and licence, so a fine-tuned checkpoint's card carries the chain it came from
    parent: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Checkpoint:
    """A model with everything needed to use it, train it further, or say where it came from."""

    model_config: ModelConfig
    codec: Codec
    model_state: dict  # parameter name -> tensor (saved on the CPU)
    decoding: Decoding = field(default_factory=Decoding)
    provenance: Provenance = field(default_factory=Provenance)
    licence: str = ""
    versions: dict = field(default_factory=dict)  # of the writer; save_checkpoint sets it
    train_state: dict | None = None  # optimiser, scheduler, counters and RNG state (last.pt only)
    extra: dict = field(default_factory=dict)
    format_version: int = FORMAT_VERSION  # of the file it was read from
    source: str = field(default="", compare=False)  # the file it was read from ("" when not read)

    @property
    def metadata(self) -> dict:
        """The model card as a flat dict (data, val_cer, val_data, epoch, step, licence, version), unknowns left out."""
        p = self.provenance
        card = {
            "data": p.data,
            "val_cer": p.val_cer,
            "val_data": p.val_data,
            "epoch": p.epoch,
            "step": p.step,
            "licence": self.licence,
            "version": p.model_version,
            "parent": p.parent.get("version") or p.parent.get("file") or None,
        }
        return {k: v for k, v in card.items() if v not in (None, "")}

    def build_model(self) -> torch.nn.Module:
        """The model with these weights (float32, on the CPU, in training mode as ``nn.Module`` starts)."""
        model = build_model(self.model_config)
        state = {k: v.float() if v.is_floating_point() else v for k, v in self.model_state.items()}
        try:
            model.load_state_dict(state)
        except RuntimeError as error:
            raise CheckpointError(
                f"checkpoint {self.source or '(unsaved)'}: its weights do not fit its model config "
                f"{self.model_config}: {error}"
            ) from error
        return model

    def replace(self, **changes) -> Checkpoint:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The plain-types form ``save_checkpoint`` writes (format ``FORMAT_VERSION``)."""
        payload = {
            "format_version": FORMAT_VERSION,
            "model_config": self.model_config.to_dict(),
            "codec": self.codec.to_dict(),
            "model_state": {k: v.detach().cpu() for k, v in self.model_state.items()},
            "decoding": dataclasses.asdict(self.decoding),
            "provenance": dataclasses.asdict(self.provenance),
            "licence": self.licence,
            "versions": {"package": __version__, "torch": str(torch.__version__)},  # TorchVersion is not a plain str
            "extra": dict(self.extra),
        }
        if self.train_state is not None:
            payload["train_state"] = self.train_state
        return payload

    @classmethod
    def from_dict(cls, payload: dict, source: str = "") -> Checkpoint:
        """Read format 1 or 2 (``payload["format_version"]``); ``ValueError``/``KeyError`` on bad contents."""
        version = payload["format_version"]
        common = {
            "model_config": ModelConfig.from_dict(payload["model_config"]),
            "codec": Codec.from_dict(payload["codec"]),
            "model_state": dict(payload["model_state"]),
            "train_state": payload.get("train_state"),
            "format_version": version,
            "source": source,
        }
        if version == 1:
            return cls(**common, **_from_format_1(payload))
        return cls(
            **common,
            decoding=Decoding(**payload["decoding"]),
            provenance=Provenance(**payload.get("provenance", {})),
            licence=payload.get("licence", ""),
            versions=dict(payload.get("versions", {})),
            extra={**{k: v for k, v in payload.items() if k not in _KEYS[2]}, **payload.get("extra", {})},
        )


def _from_format_1(payload: dict) -> dict:
    """The format-2 fields of a format-1 payload (``loss``, ``metadata``, ``config``, ``library_version``)."""
    metadata = dict(payload.get("metadata", {}))
    recipe = dict(payload.get("config", {}))
    detokenized = recipe.get("data", {}).get("detokenize", True)
    provenance = Provenance(
        data=metadata.get("data") or "",
        recipe=recipe,
        val_cer=metadata.get("val_cer"),
        val_data=metadata.get("val_data") or "",
        epoch=metadata.get("epoch"),
        step=metadata.get("step"),
        model_version=metadata.get("version") or "",
    )
    return {
        "decoding": Decoding(OUTPUT_KIND_OF_LOSS[payload["loss"]], "natural" if detokenized else "as_labelled"),
        "provenance": provenance,
        "licence": metadata.get("licence") or "",
        "versions": {"package": payload["library_version"]} if "library_version" in payload else {},
        "extra": {k: v for k, v in payload.items() if k not in _KEYS[1]},  # e.g. a bad-step dump's batch
    }


def save_checkpoint(checkpoint: Checkpoint, path: str | Path) -> Path:
    """Write ``checkpoint`` atomically (temporary file + rename): an interrupted save never corrupts ``path``."""
    if not isinstance(checkpoint, Checkpoint):
        raise TypeError(f"save_checkpoint needs a Checkpoint, got {type(checkpoint).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = checkpoint.to_dict()
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


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Load a checkpoint of any readable format, raising ``CheckpointError`` that names the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # torch raises many types for corrupt files
        raise CheckpointError(f"checkpoint {path} could not be read (corrupt or not a checkpoint): {error}") from error
    if not isinstance(payload, dict):
        raise CheckpointError(f"checkpoint {path} does not hold a dict but {type(payload).__name__}")
    if "format_version" not in payload:
        raise CheckpointError(f"checkpoint {path} lacks format_version: not a text_recognizer checkpoint")
    version = payload["format_version"]
    if version not in READABLE_VERSIONS:
        raise CheckpointError(
            f"checkpoint {path} has format version {version}, this version of text_recognizer ({__version__}) "
            f"reads versions {', '.join(map(str, READABLE_VERSIONS))}"
        )
    missing = [k for k in _REQUIRED[version] if k not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {missing}: not a text_recognizer checkpoint")
    try:
        return Checkpoint.from_dict(payload, source=str(path))
    except (ValueError, TypeError, KeyError) as error:
        raise CheckpointError(f"checkpoint {path} does not match this version's model: {error}") from error
