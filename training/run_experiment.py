"""Train a line recognizer.

    python training/run_experiment.py                       # default CRNN on built-in synthetic lines
    python training/run_experiment.py --data DIR [DIR...] --val-data DIR
    python training/run_experiment.py --data iam --iam-archives DIR --allow-unverified   # official IAM split
    python training/run_experiment.py --data emnist_lines       # EMNIST Lines (downloads EMNIST once)
    python training/run_experiment.py --help                # every flag, grouped, with defaults
"""

from __future__ import annotations

import argparse
import sys

from text_recognizer.checkpoint import CheckpointError
from text_recognizer.codec import Codec
from text_recognizer.data.checks import DataCheckError
from text_recognizer.data.download import DownloadError
from text_recognizer.data.folder import DatasetFormatError
from training.config import add_config_arguments, config_from_args
from training.trainer import TrainingError, fit


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run_experiment.py",
        description="Train a handwritten text-line recognizer (CRNN + CTC) and save best.pt / last.pt in a run directory.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_config_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    codec = Codec()
    try:
        config = config_from_args(args, num_classes=codec.num_classes)
        loggers = []
        if config.run.wandb:
            from training.wandb_logger import WandbLogger

            loggers.append(WandbLogger(project=config.run.wandb_project, group=config.run.group, num_samples=config.run.wandb_samples))
        summary = fit(config, loggers=loggers, codec=codec)
    except (ValueError, TrainingError, CheckpointError, DataCheckError, DatasetFormatError, DownloadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    best = summary["best_val_cer"]
    print(f"model: {summary['best_checkpoint']}")
    print(f"val CER: {best:.4f}" if best is not None else "val CER: n/a (no validation ran)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
