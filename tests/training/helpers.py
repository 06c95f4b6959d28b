"""Small configurations shared by the training tests: tiny models that train in seconds."""

from __future__ import annotations

from pathlib import Path

from text_recognizer.codec import Codec
from text_recognizer.models.config import ModelConfig
from training.loop.config import DataConfig, ExperimentConfig, OptimConfig, RunConfig
from training.loop.loggers import Logger

TINY_MODEL = dict(
    height=32, cnn_channels=(8, 16), feature_dim=64, lstm_hidden=64, conv_blocks=1, lstm_layers=1, dropout=0.0
)
TINY_FLAGS = [
    "--height",
    "32",
    "--cnn-channels",
    "8",
    "16",
    "--feature-dim",
    "64",
    "--lstm-hidden",
    "64",
    "--conv-blocks",
    "1",
    "--lstm-layers",
    "1",
    "--progress",
    "false",
]


def tiny_config(
    run_dir: Path,
    *,
    model: dict | None = None,
    data: dict | None = None,
    optim: dict | None = None,
    run: dict | None = None,
) -> ExperimentConfig:
    return ExperimentConfig(
        model=ModelConfig(**{**TINY_MODEL, **(model or {})}, num_classes=Codec().num_classes),
        data=DataConfig(**{"synthetic_train_lines": 16, "synthetic_val_lines": 8, **(data or {})}),
        optim=OptimConfig(
            **{"batch_size": 4, "max_epochs": 1, "lr_schedule": "none", "warmup_steps": 0, **(optim or {})}
        ),
        # Fixed threads: under --threads auto a busy machine changes the thread count mid-run, which
        # changes float summation order and so breaks the bit-exact resume comparisons.
        run=RunConfig(**{"run_dir": str(run_dir), "progress": False, "checkpoint_every": 0, "threads": "2",
                         **(run or {})}),
    )


class StopAtStep(Logger):
    """Interrupts the run after a given step, like Ctrl-C would."""

    def __init__(self, step: int):
        self.step = step

    def log_train(self, step, metrics):
        if step == self.step:
            raise KeyboardInterrupt
