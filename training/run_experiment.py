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
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from text_recognizer.checkpoint import CheckpointError  # noqa: E402
from text_recognizer.codec import Codec  # noqa: E402
from text_recognizer.data.checks import DataCheckError  # noqa: E402
from text_recognizer.data.download import DownloadError  # noqa: E402
from text_recognizer.data.folder import DatasetFormatError  # noqa: E402
from training.alphabet import resolve_alphabet, with_alphabet  # noqa: E402
from training.config import add_config_arguments, config_from_args  # noqa: E402
from training.trainer import TrainingError, fit  # noqa: E402


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
    try:
        config = config_from_args(args, num_classes=Codec().num_classes)
        alphabet = resolve_alphabet(config)  # --charset: built-in, from the labels, or a file
        print(alphabet.summary())
        codec, config = alphabet.codec, with_alphabet(config, alphabet.codec)
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
