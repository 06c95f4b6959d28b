"""Train a line recognizer.

    python training/run_experiment.py                       # default CRNN on built-in synthetic lines
    python training/run_experiment.py --data DIR [DIR...] --val-data DIR
    python training/run_experiment.py --data iam --iam-archives DIR --allow-unverified   # official IAM split
    python training/run_experiment.py --data emnist_lines       # EMNIST Lines (downloads EMNIST once)
    python training/run_experiment.py --help                # every flag, grouped, with defaults
    python training/run_experiment.py --resume --run-dir DIR [--max-minutes N ...]   # continue a run
    text-recognizer-train --finetune text_recognizer/artifacts/default.pt --data MY_LINES   # adapt (finetune.py)
    text-recognizer-train --recipe bundled [--recipe-dir D] [--dry-run] [--set data=/path]   # a multi-stage recipe

Under ``torchrun --nproc-per-node N training/run_experiment.py ...`` it trains with DistributedDataParallel
(README, "Scaling out").

``--resume`` continues the run in DIR with the configuration saved in its ``last.pt``; only the flags in
``training.loop.config.RESUME_OVERRIDES`` (budgets, logging, workers, device) may be given with other values,
and each resume's changes are appended to ``DIR/config_overrides.jsonl``.
"""

from __future__ import annotations

import os
import sys

from text_recognizer.checkpoint import CheckpointError
from text_recognizer.codec import Codec
from text_recognizer.data.checks import DataCheckError
from text_recognizer.data.download import DownloadError
from text_recognizer.data.folder import DatasetFormatError
from training.loop import distributed
from training.loop.alphabet import resolve_alphabet, with_alphabet
from training.loop.checkpointing import saved_config
from training.loop.config import build_parser, config_from_args, with_flags
from training.loop.run_setup import run_directory
from training.loop.run_state import TrainingError
from training.loop.trainer import fit


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(arg == "--recipe" or arg.startswith("--recipe=") for arg in argv):
        from training.recipe import runner as recipe  # its train stages call this main again, without --recipe

        return recipe.main(argv, train=main)
    if any(arg == "--finetune" or arg.startswith("--finetune=") for arg in argv):
        from training.finetune import (
            command as finetune,  # a checked plan, then one experiment through train_planned below
        )

        return finetune.main(argv, train=train_planned)
    args = build_parser().parse_args(argv)
    try:
        config = config_from_args(args, num_classes=Codec().num_classes)
        if config.run.resume:  # the saved configuration, with the flags actually given on the command line
            config, codec = resumed_config(config, argv), None  # codec: the checkpoint's
        else:
            alphabet = resolve_alphabet(config)  # --charset: built-in, from the labels, or a file
            print(alphabet.summary())
            codec, config = alphabet.codec, with_alphabet(config, alphabet.codec)
        summary = train_with_loggers(config, codec)
    except (ValueError, TrainingError, CheckpointError, DataCheckError, DatasetFormatError, DownloadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        distributed.teardown()
    return report(summary)


def resumed_config(config, argv: list[str]):
    """The saved configuration of the run to resume, with the flags actually given on the command line."""
    given = vars(build_parser(suppress_defaults=True).parse_args(argv))
    return with_flags(saved_config(run_directory(config)), given)


def train_planned(config, codec, argv: list[str]) -> dict:
    """One experiment for ``training/finetune/command.py``: ``config`` and ``codec`` as planned, or (``config`` None)
    the run that ``argv``'s ``--resume --run-dir`` names. Errors propagate to the caller."""
    try:
        if config is None:
            config = resumed_config(config_from_args(build_parser().parse_args(argv), Codec().num_classes), argv)
        summary = train_with_loggers(config, codec)
    finally:
        distributed.teardown()
    report(summary)
    return summary


def train_with_loggers(config, codec) -> dict:
    """``fit`` with the loggers the configuration asks for (W&B on rank 0)."""
    loggers = []
    if config.run.wandb and int(os.environ.get("RANK", "0")) == 0:  # under torchrun only rank 0 logs
        from training.experiments.wandb_logger import WandbLogger

        loggers.append(
            WandbLogger(project=config.run.wandb_project, group=config.run.group, num_samples=config.run.wandb_samples)
        )
    return fit(config, loggers=loggers, codec=codec)


def report(summary: dict) -> int:
    """Print where the model went and its validation CER (rank 0)."""
    if int(os.environ.get("RANK", "0")) != 0:
        return 0
    best = summary["best_val_cer"]
    print(f"model: {summary['best_checkpoint']}")
    print(f"val CER: {best:.4f}" if best is not None else "val CER: n/a (no validation ran)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
