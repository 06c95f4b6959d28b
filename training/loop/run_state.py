"""What one training run carries from function to function: its counters, its data, and everything built for it.

The loop's modules (``run_setup``, ``step``, ``evaluation``, ``checkpointing``, ``trainer``) all take a
``Run``; its definition lives here, below all of them, so that none of them has to import another
just to name the state they share. ``TrainState`` is the part that ``last.pt`` saves and ``--resume``
restores; the rest is rebuilt from the configuration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from text_recognizer.codec import Codec
from text_recognizer.ctc.interctc import InterCTC
from training.loop import distributed
from training.loop.batching import EpochSampler
from training.loop.config import ExperimentConfig
from training.loop.data import Datasets
from training.loop.ema import WeightAverage
from training.loop.guard import NonFiniteGuard
from training.loop.loggers import Logger
from training.loop.threads import ThreadGovernor


class TrainingError(RuntimeError):
    """Training cannot continue (non-finite loss, bad resume state, ...)."""


@dataclass
class TrainState:
    """The counters saved in ``last.pt``: where the run is, its time budget and its best model so far."""

    epoch: int = 0
    batch_in_epoch: int = 0
    step: int = 0
    best_cer: float = float("inf")
    best_epoch: int = -1
    epochs_without_improvement: int = 0
    elapsed: float = 0.0  # training + validation seconds over all sessions (what --max-minutes counts)
    lines_seen: int = 0
    skipped_infeasible: int = 0
    train_seconds: float = 0.0
    bad_steps: int = 0  # training steps skipped by the non-finite guard
    blank_epochs: int = 0  # consecutive validations whose predictions were (almost) all blank
    last_val_cer: float | None = None  # the latest validation, for summary.json after a resume
    last_val_wer: float | None = None
    world_size: int = 1  # processes the run trained with (batch_in_epoch counts steps per process)


@dataclass
class Loaders:
    """The training and validation data of a run, as the loop reads it."""

    train_set: torch.utils.data.Dataset
    val_set: torch.utils.data.Dataset
    sampler: EpochSampler
    train: DataLoader
    val: DataLoader
    val_order: list[int]  # validation visits lines in this order (by width); results are put back in dataset order
    val_shard: list[int]  # the part of val_order this process evaluates (all of it when alone)
    steps_per_epoch: int


@dataclass
class Run:
    """Everything one run works with: set up once by ``set_up_run``, passed to the loop's functions."""

    config: ExperimentConfig
    run_dir: Path
    device: torch.device
    codec: Codec
    datasets: Datasets
    data: Loaders
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    interctc: InterCTC | None
    loggers: list[Logger]
    guard: NonFiniteGuard
    state: TrainState
    git_rev: str = ""
    sample_images: list = field(default_factory=list)  # preprocessed validation lines for loggers' sample tables
    interctc_names: dict = field(default_factory=dict)  # InterCTC layer -> metric prefix interctc_<block>
    start_time: float = 0.0  # time.monotonic() at which this run's elapsed time would have been 0
    last_loss: float = float("nan")
    train_model: torch.nn.Module | None = None  # the model in DistributedDataParallel under torchrun, else model
    scaler: torch.amp.GradScaler | None = None  # --precision 16-mixed: loss scaling against float16 underflow
    threads: ThreadGovernor | None = None  # torch's intra-op threads (--threads; training/loop/threads.py)
    average: WeightAverage | None = None  # --ema-decay: the averaged weights that are validated and saved
    teacher: torch.nn.Module | None = None  # --distill-from: the frozen model whose posteriors are kept near

    @property
    def shipped_model(self) -> torch.nn.Module:
        """The weights validation scores and ``best.pt`` holds: the average with ``--ema-decay``, else the model."""
        return self.average.model if self.average is not None else self.model

    @property
    def num_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def synced_elapsed(self) -> float:
        """Seconds since the run began, rank 0's on every rank: the time budget and the schedule must agree."""
        elapsed = time.monotonic() - self.start_time
        if distributed.world_size() > 1:
            elapsed = distributed.sum_all([elapsed if distributed.is_main() else 0.0])[0]
        return elapsed
