"""Run configuration: one dataclass per concern, with argparse flags generated from them.

Each field's ``metadata`` carries its help text (and ``choices``/``flag`` where needed); the
flag is the field name in kebab-case. The resolved config is saved as plain types in
``config.json`` and inside every checkpoint.

A resumed run (``--resume``) keeps the configuration saved in its ``last.pt``: only the flags in
``RESUME_OVERRIDES`` (budgets, logging, workers, device) may differ; ``resume_changes`` sorts the
differences into allowed and refused ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.ctc.smoothing import check_smoothing
from text_recognizer.models.config import ModelConfig
from training.loop.threads import parse_threads

OPTIMIZERS = ("rmsprop", "adam", "adamw")
SCHEDULES = ("none", "cosine", "onecycle")
LOSSES = ("ctc", "nll")
CTC_IMPLS = ("auto", "triton", "torch")
CTC_REDUCTIONS = ("line", "char")  # how training/loop/objective.py's batch_ctc_loss averages a batch
PRECISIONS = ("32", "bf16", "16-mixed")
DEVICES_HELP = "auto (cuda when available, else cpu), cpu, cuda, cuda:N"


@dataclass(frozen=True)
class DataConfig:
    data: tuple[str, ...] = field(default=("synthetic",), metadata={"help": (
        "training data: 'synthetic', 'iam' (official IAM lines, processed and cached on first use), "
        "'emnist_lines', and/or dataset folders (images + labels.tsv, e.g. ../shared/data/iam/train)"
    )})
    val_data: tuple[str, ...] = field(default=(), metadata={"help": (
        "validation folder(s); default: synthetic lines for --data synthetic, else a held-out --val-fraction "
        "of the training folders"
    )})
    val_fraction: float = field(default=0.05, metadata={"help": (
        "share of the training folders held out for validation when --val-data is not given"
    )})
    synthetic_train_lines: int = field(default=2000, metadata={"help": "synthetic lines per training epoch"})
    synthetic_val_lines: int = field(default=300, metadata={"help": "synthetic validation lines (a fixed set)"})
    fonts: str = field(default="", metadata={"help": (
        "folder of handwriting fonts (.ttf/.otf/.woff/.woff2, e.g. script faces from Google Fonts): adds "
        "--font-train-lines lines drawn with them to each epoch, augmented like folder lines "
        "(text_recognizer/data/font_lines.py); empty: none"
    )})
    font_train_lines: int = field(default=3000, metadata={"help": "font-drawn lines per training epoch (with --fonts)"})
    font_text: tuple[str, ...] = field(default=(), metadata={"help": (
        "text for the --fonts lines: .txt files or folders of them (books, letters, text in your alphabet), cut "
        "at spaces into line-sized pieces (seeded); default: the built-in generator's English-like lines"
    )})
    bad_samples: str = field(default="skip", metadata={"help": (
        "what to do with unreadable, unknown-character or CTC-infeasible samples"
    ), "choices": ("skip", "error")})
    bucket_batches: int = field(default=32, metadata={"help": (
        "width-bucketed batches: each run of N batches' worth of shuffled lines is sorted by image width and "
        "cut into batches, which are then shuffled, so batches pad little (about 1.5x faster on IAM; "
        "training/loop/batching.py); 0: plain shuffle. Needs widths from image headers (folder data), not "
        "synthetic lines"
    )})
    num_workers: int = field(default=0, metadata={"help": "DataLoader worker processes (0: load in the main process)"})
    augment: bool = field(default=True, metadata={"help": (
        "augment the training images (slant, elastic, ink/paper, ruled lines, blur, noise, JPEG; "
        "text_recognizer/data/augment.py); applies to folder and named datasets and --fonts lines, never to "
        "validation; "
        "synthetic lines have their own variation and are not augmented"
    )})
    augment_p: float = field(default=0.5, metadata={"help": (
        "share of training lines that are augmented (with --augment); the rest are shown clean. 0.5 read IAM "
        "val best of 0.25 / 0.5 / 1.0 on the CPU recipe (benchmarks/RESULTS.md)"
    )})
    detokenize: bool = field(default=True, metadata={"help": (
        "read folder labels with natural spacing: remove IAM's spaces around punctuation and clitics ('Leeds "
        ", Ontario' -> 'Leeds, Ontario'; text_recognizer/data/tokenization.py)"
    )})
    iam_archives: str = field(default="", metadata={"help": (
        "for --data iam: folder with lines.tgz, ascii.tgz and "
        "largeWriterIndependentTextLineRecognitionTask.zip (IAM needs registration; default: the download "
        "cache, then download)"
    )})
    iam_train_extra: bool = field(default=False, metadata={"help": (
        "for --data iam: also train on the lines in no official list whose writers are not in val/test"
    )})
    allow_unverified: bool = field(default=False, metadata={"help": (
        "accept downloaded or local archives that have no sha256 recorded in "
        "text_recognizer/data/metadata/<dataset>.toml"
    )})
    charset: str = field(default="iam", metadata={"help": (
        "the alphabet (training/loop/alphabet.py): 'iam' (IAM's 79 built-in characters), 'latin' (161: IAM's plus "
        "the letters and signs of French and the other Western European languages, docs/alphabet.md), "
        "'data' (the characters of the training labels seen at least --charset-min-count times; lines with the "
        "others are reported and skipped), or a UTF-8 file with one character per line"
    )})
    charset_min_count: int = field(default=1, metadata={"help": (
        "with --charset data: leave out characters seen fewer times in the training labels (they are listed)"
    )})
    unicode_normalization: str = field(default="NFC", metadata={"help": (
        "normalise folder and PAGE/ALTO labels (and a --charset file): NFC composes 'e' + accent into one "
        "character, NFD decomposes"
    ), "choices": ("NFC", "NFD", "none")})

    def __post_init__(self) -> None:
        if not 0.0 <= self.augment_p <= 1.0:
            raise ValueError(f"--augment-p must be a share in [0, 1], got {self.augment_p}")
        if self.charset_min_count < 1:
            raise ValueError(f"--charset-min-count must be >= 1, got {self.charset_min_count}")
        if self.bucket_batches < 0:
            raise ValueError(f"--bucket-batches must be >= 0 (0: plain shuffle), got {self.bucket_batches}")
        if self.font_text and not self.fonts:
            raise ValueError("--font-text is the text of the --fonts lines: give --fonts FOLDER as well")


@dataclass(frozen=True)
class OptimConfig:
    optimizer: str = field(default="adam", metadata={"help": (
        "optimiser (adam: ahead of rmsprop at every epoch of the default job and in the IAM recipe, "
        "two seeds each; benchmarks/RESULTS.md)"
    ), "choices": OPTIMIZERS})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate"})
    weight_decay: float = field(default=0.0, metadata={"help": "weight decay (decoupled for adamw)"})
    batch_size: int = field(default=16, metadata={"help": "lines per batch"})
    max_epochs: int = field(default=5, metadata={"help": "stop after this many epochs"})
    max_steps: int = field(default=0, metadata={"help": "stop after this many optimiser steps (0: no limit)"})
    max_minutes: float = field(default=0.0, metadata={"help": (
        "stop after this much training time, checked after each step (0: no limit)"
    )})
    grad_clip: float = field(default=5.0, metadata={"help": "clip the gradient norm to this value (0: off)"})
    lr_schedule: str = field(default="cosine", metadata={"help": (
        "learning-rate schedule over the planned steps"
    ), "choices": SCHEDULES})
    cosine_floor: float = field(default=0.02, metadata={"help": (
        "with --lr-schedule cosine: the learning rate it decays to, as a share of --lr"
    )})
    warmup_steps: int = field(default=100, metadata={"help": "linear learning-rate warm-up steps"})
    freeze: tuple[str, ...] = field(default=(), metadata={"help": (
        "parts of the model whose weights stay as they were (top-level module names, e.g. window_cnn: the "
        "convolutional front end; encoder: the BiLSTM); for fine-tuning on a few lines"
    )})
    ema_decay: float = field(default=0.0, metadata={"help": (
        "validate and save an exponential moving average of the weights with this decay per step "
        "(e.g. 0.999: about the last 1,000 steps; training/loop/ema.py); 0: off, the raw weights"
    )})
    sortagrad: bool = field(default=True, metadata={"help": (
        "SortaGrad: run the first epoch from short lines to long ones (by image width, else label length), "
        "later epochs shuffled (width-bucketed with --bucket-batches)"
    )})

    def __post_init__(self) -> None:
        if not 0.0 <= self.cosine_floor <= 1.0:
            raise ValueError(f"--cosine-floor must be a share of --lr in [0, 1], got {self.cosine_floor}")
        if not 0.0 <= self.ema_decay < 1.0:
            raise ValueError(f"--ema-decay must be in [0, 1) (0: off), got {self.ema_decay}")


@dataclass(frozen=True)
class RunConfig:
    name: str = field(default="", metadata={"help": "run name (default: <model>-<data>-<timestamp>)"})
    run_dir: str = field(default="", metadata={"help": "run directory (default: training/logs/<name>)"})
    resume: bool = field(default=False, metadata={"help": "resume from <run-dir>/last.pt"})
    init_from: str = field(default="", metadata={"help": (
        "start from the weights of this checkpoint (fine-tuning; same architecture, or more --conv-blocks / "
        "--lstm-layers: the new blocks start as the identity), with a fresh optimiser"
    )})
    seed: int = field(default=0, metadata={"help": "random seed (data order, initialisation, dropout)"})
    device: str = field(default="auto", metadata={"help": DEVICES_HELP})
    threads: str = field(default="auto", metadata={"help": (
        "torch intra-op threads (per process under torchrun): a number, or auto: the cores this process may use "
        "(divided among the processes on this machine, at most torch's default or OMP_NUM_THREADS), lowered while "
        "other processes take CPU and raised again when they stop (training/loop/threads.py)"
    )})
    loss: str = field(default="ctc", metadata={"help": (
        "ctc, or nll: the per-window cross-entropy baseline"
    ), "choices": LOSSES})
    ctc_impl: str = field(default="auto", metadata={"help": "CTC implementation", "choices": CTC_IMPLS})
    ctc_reduction: str = field(default="line", metadata={"help": (
        "how a batch's CTC loss is averaged: line (each line's loss over its length, then the mean over lines; "
        "a short line's characters weigh more) or char (the summed loss over the batch's characters: every "
        "character weighs the same, as in CER)"
    ), "choices": CTC_REDUCTIONS})
    label_smoothing: float = field(default=0.0, metadata={"help": (
        "CTC label smoothing eps in [0, 1): loss = (1 - eps) * CTC + eps * KL(uniform || frame posteriors), "
        "i.e. each frame's soft CTC target mixed with the uniform distribution "
        "(text_recognizer/ctc/smoothing.py); 0: off"
    )})
    distill_from: str = field(default="", metadata={"help": (
        "a checkpoint whose frame posteriors the model is kept near while it trains (learning without "
        "forgetting): --distill-weight times KL(its posteriors || the model's) per frame is added to the loss. "
        "Same windows and alphabet as the model (e.g. the checkpoint of --init-from); empty: off"
    )})
    distill_weight: float = field(default=1.0, metadata={"help": (
        "the weight of the --distill-from term (> 0)"
    )})
    precision: str = field(default="32", metadata={"help": (
        "training precision: 32 (float32), bf16 (autocast to bfloat16; CUDA or CPU) or 16-mixed (autocast to "
        "float16 with a gradient scaler; CUDA only). Weights, optimiser state and validation stay float32"
    ), "choices": PRECISIONS})
    overfit_batches: int = field(default=0, metadata={"help": (
        "train and validate on the first N training batches only (debugging)"
    )})
    val_batch_size: int = field(default=32, metadata={"help": (
        "lines per validation batch, at least --batch-size (no gradients are kept, so it can be larger)"
    )})
    val_every: int = field(default=1, metadata={"help": (
        "validate (and consider best.pt) every N epochs, and always when training stops: on a tight "
        "--max-minutes budget validation time is training time lost"
    )})
    early_stopping: int = field(default=0, metadata={"help": (
        "stop when val CER has not improved for this many epochs (0: off)"
    )})
    max_bad_steps: int = field(default=5, metadata={"help": (
        "stop after this many consecutive training steps with a non-finite loss or gradient (each is skipped "
        "and dumped to <run-dir>/bad_steps/; see docs/robustness.md)"
    )})
    blank_collapse_epochs: int = field(default=3, metadata={"help": (
        "warn when validation predictions stay (almost) all blank for this many consecutive epochs (0: off)"
    )})
    checkpoint_every: int = field(default=200, metadata={"help": (
        "also save last.pt every N steps within an epoch (0: only at epoch ends)"
    )})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    group: str = field(default="", metadata={"help": (
        "experiment group shared by related runs (W&B group; shown by compare_runs.py)"
    )})
    wandb: bool = field(default=False, metadata={"help": (
        "log to Weights & Biases (respects WANDB_MODE/PROJECT/ENTITY/DIR; offline without an API key)"
    )})
    wandb_project: str = field(default="", metadata={"help": (
        "W&B project (default: $WANDB_PROJECT, else text-recognizer)"
    )})
    wandb_samples: int = field(default=16, metadata={"help": (
        "fixed validation lines logged as a W&B table every epoch"
    )})

    def __post_init__(self) -> None:
        parse_threads(self.threads)  # validates: 'auto' or a positive number
        check_smoothing(self.label_smoothing)
        if self.distill_from and not self.distill_weight > 0:
            raise ValueError(f"--distill-weight must be > 0 with --distill-from, got {self.distill_weight}")
        if self.distill_from and self.loss != "ctc":
            raise ValueError(f"--distill-from needs --loss ctc, got --loss {self.loss}")
        if self.val_every < 1:
            raise ValueError(f"--val-every must be >= 1 (epochs between validations), got {self.val_every}")
        if self.val_batch_size < 1:
            raise ValueError(f"--val-batch-size must be >= 1, got {self.val_batch_size}")


@dataclass(frozen=True)
class InterCTCConfig:
    """Intermediate CTC losses (text_recognizer/ctc/interctc.py, docs/regularisers.md); off by default."""

    layers: tuple[int, ...] = field(default=(), metadata={"help": (
        "encoder blocks (numbered from 1: conv1.., then lstm1..) whose outputs get an intermediate CTC loss "
        "through the shared output head, e.g. 1 2"
    )})
    weights: tuple[float, ...] = field(default=(), metadata={"help": (
        "one weight in (0, 1) per --interctc-layers entry, summing to < 1: loss = (1 - sum(w)) * L_final + "
        "sum(w_k * L_k)"
    )})

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "weights", tuple(self.weights))
        InterCTC.from_settings(self.layers, self.weights)  # validates (None when off)


@dataclass(frozen=True)
class ExperimentConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    interctc: InterCTCConfig = field(default_factory=InterCTCConfig)

    def __post_init__(self) -> None:
        if self.run.label_smoothing > 0 and self.run.loss != "ctc":
            raise ValueError(f"--label-smoothing needs --loss ctc, got --loss {self.run.loss}")
        interctc = InterCTC.from_settings(self.interctc.layers, self.interctc.weights)
        if interctc is not None:
            if self.run.loss != "ctc":
                raise ValueError(f"--interctc-layers needs --loss ctc, got --loss {self.run.loss}")
            interctc.check_layers(self.model.block_names)

    def to_dict(self) -> dict:
        return {
            "model": self.model.to_dict(),
            "data": _plain(dataclasses.asdict(self.data)),
            "optim": dataclasses.asdict(self.optim),
            "run": dataclasses.asdict(self.run),
            "interctc": _plain(dataclasses.asdict(self.interctc)),
        }

    @classmethod
    def from_dict(cls, data: dict) -> ExperimentConfig:
        return cls(
            model=ModelConfig.from_dict(data["model"]),
            # Configs made before bucketing and --augment-p keep their data order and augmented every line.
            data=DataConfig(**{"bucket_batches": 0, "augment_p": 1.0,
                               **{k: tuple(v) if isinstance(v, list) else v for k, v in data["data"].items()}}),
            optim=OptimConfig(**data["optim"]),
            run=RunConfig(**data["run"]),
            interctc=InterCTCConfig(**data.get("interctc", {})),  # absent in configs made before InterCTC
        )


# Model fields whose flag differs from the field name, and fields that are not flags.
_FLAG_NAMES = {
    ("model", "kind"): "model", ("interctc", "layers"): "interctc_layers", ("interctc", "weights"): "interctc_weights",
}
_NOT_FLAGS = {("model", "num_classes")}
_GROUPS = {
    "model": ("model", "architecture and window geometry"),
    "data": ("data", "training and validation data"),
    "optim": ("optimisation", "optimiser, schedule and budget"),
    "run": ("run", "run directory, device, seeds and checkpoints"),
    "interctc": ("intermediate CTC", "extra CTC losses on intermediate encoder blocks (docs/regularisers.md)"),
}


def parse_bool(text: str) -> bool:
    """``true/false``, ``1/0``, ``yes/no`` (any case), as ``wandb agent`` passes booleans."""
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "y", "on"):
        return True
    if value in ("0", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {text!r}")


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _flag(section: str, name: str) -> str:
    return "--" + _FLAG_NAMES.get((section, name), name).replace("_", "-")


def add_config_arguments(parser: argparse.ArgumentParser, suppress_defaults: bool = False) -> None:
    """One argument group per config section, one flag per field, with help and defaults.

    With ``suppress_defaults`` a flag that is not given is absent from the parsed namespace, so the
    namespace holds exactly what the command line said (what ``--resume`` applies to a saved config).
    """
    defaults = ExperimentConfig()
    for section, (title, description) in _GROUPS.items():
        group = parser.add_argument_group(title, description)
        section_config = getattr(defaults, section)
        hints = typing.get_type_hints(type(section_config))
        for f in fields(section_config):
            if (section, f.name) in _NOT_FLAGS:
                continue
            default = argparse.SUPPRESS if suppress_defaults else getattr(section_config, f.name)
            kwargs: dict = {"dest": f"{section}.{f.name}", "help": f.metadata.get("help", ""), "default": default}
            hint = hints[f.name]
            origin = typing.get_origin(hint)
            if hint is bool:
                kwargs.update(type=parse_bool, nargs="?", const=True, metavar="BOOL")
            elif origin in (tuple, list):
                item = typing.get_args(hint)[0]
                optional = section == "data" and f.name in ("val_data", "font_text")
                kwargs.update(type=item, nargs="*" if optional else "+")
            elif origin in (typing.Union, types.UnionType):
                kwargs.update(type=next(a for a in typing.get_args(hint) if a is not type(None)))
            else:
                kwargs.update(type=hint)
            if hint is not bool:
                kwargs["metavar"] = f.name.upper()
            if "choices" in f.metadata:
                kwargs["choices"] = f.metadata["choices"]
                kwargs.pop("metavar", None)
            group.add_argument(_flag(section, f.name), **kwargs)


def config_from_args(args: argparse.Namespace, num_classes: int) -> ExperimentConfig:
    """Build the experiment config from parsed flags (validation happens in the dataclasses)."""
    return with_flags(ExperimentConfig(model=ModelConfig(num_classes=num_classes)), vars(args))


def with_flags(config: ExperimentConfig, flags: dict[str, Any]) -> ExperimentConfig:
    """``config`` with parsed flags set: ``{"section.field": value}`` as ``add_config_arguments`` names them."""
    values: dict[str, dict] = {}
    for key, value in flags.items():
        if "." in key:
            section, name = key.split(".", 1)
            values.setdefault(section, {})[name] = tuple(value) if isinstance(value, list) else value
    return dataclasses.replace(config, **{s: dataclasses.replace(getattr(config, s), **v) for s, v in values.items()})


#: What ``--resume`` may change, as ``section.field``: the budget, logging, and where the run runs
#: (workers, threads, device, CTC implementation, checkpoint frequency). Everything else stays as saved.
RESUME_OVERRIDES = (
    "optim.max_minutes", "optim.max_epochs", "optim.max_steps",
    "run.progress", "run.wandb", "run.wandb_project", "run.wandb_samples", "run.group",
    "data.num_workers", "run.threads", "run.device", "run.ctc_impl", "run.checkpoint_every", "run.precision",
)
#: Which run to continue, not how it trains: never compared.
_RUN_IDENTITY = ("run.resume", "run.run_dir", "run.name")


def flag_name(key: str) -> str:
    """The command-line flag of a ``section.field`` key (the key itself for fields that are not flags)."""
    section, name = key.split(".", 1)
    return key if (section, name) in _NOT_FLAGS else _flag(section, name)


#: The same as flags: ``{"--max-minutes": "optim.max_minutes", ...}``.
RESUME_OVERRIDE_FLAGS = {flag_name(key): key for key in RESUME_OVERRIDES}


def flat_settings(config: ExperimentConfig) -> dict[str, Any]:
    """``{"section.field": value}`` of every setting, as plain types (what runs and resumes compare)."""
    return {f"{s}.{k}": v for s, section in config.to_dict().items() for k, v in section.items()}


def resume_changes(saved: ExperimentConfig, given: ExperimentConfig) -> tuple[dict, dict]:
    """``(allowed, refused)``: ``{flag: (saved value, given value)}`` for each field where ``given`` differs."""
    before, after = flat_settings(saved), flat_settings(given)
    changed = [k for k in before if k not in _RUN_IDENTITY and before[k] != after[k]]
    allowed = {flag_name(k): (before[k], after[k]) for k in changed if k in RESUME_OVERRIDES}
    refused = {flag_name(k): (before[k], after[k]) for k in changed if k not in RESUME_OVERRIDES}
    return allowed, refused


def build_parser(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    """``run_experiment.py``'s flags, one group per configuration dataclass (``suppress_defaults``: only the flags
    actually given come back, which is how ``--resume`` tells a changed flag from a default)."""
    parser = argparse.ArgumentParser(
        prog="run_experiment.py",
        description="Train a handwritten text-line recognizer (CRNN + CTC); best.pt / last.pt go to a run directory.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="--recipe NAME_OR_PATH runs a multi-stage recipe instead of one experiment, e.g. --recipe bundled "
               "rebuilds the bundled model (training/recipe/runner.py, docs/recipe.md; --recipe bundled --help for its "
               "flags); "
               "--finetune CHECKPOINT --data MY_LINES adapts a model to your lines with small-data defaults "
               "(training/finetune/command.py, docs/finetuning.md; --finetune X --help for its flags)",
    )
    add_config_arguments(parser, suppress_defaults)
    return parser
