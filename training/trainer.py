"""The training loop as plain functions over one run's state, in the style of torchvision's references.

    fit(config)                       set_up_run, then train_one_epoch + validate_and_checkpoint
                                      until a budget or early stopping says stop, then finish_run
    set_up_run(config)                run directory, data, model, optimiser, schedule; with --resume
                                      the configuration, weights, optimiser, schedule, counters and
                                      RNG state of <run-dir>/last.pt
    train_one_epoch(run)              the rest of the current epoch, one train_one_step per batch
    train_one_step(run, batch)        forward, backward, non-finite guard, optimiser step, logging
    evaluate(model, loader, ...)      loss, CER/WER and predictions over a loader
    validate_and_checkpoint(run)      evaluate, log, last.pt and best.pt
    finish_run(run, stop_reason)      summary.json

The run directory holds ``config.json`` (the configuration the run started with; never rewritten),
``config_overrides.jsonl`` (one line per ``--resume``: when, at which step, and which allowed flags it
changed, as ``{"--max-minutes": {"field": "optim.max_minutes", "saved": 60, "given": 120}}``),
``metrics.jsonl``, ``last.pt`` (epoch ends, every ``--checkpoint-every`` steps, Ctrl-C), ``best.pt``
and ``summary.json``. Data order is a pure function of (seed, epoch), so a run resumed
from ``last.pt`` continues with exactly the batches, random state and optimiser state it would have
had; the time budget, the schedule and the best-model tracking live in its counters.

Under ``torchrun`` (``training/distributed.py``) every process runs these same functions on its shard of
each epoch's batches with the model in DistributedDataParallel (``Run.train_model``); ``Run.model`` stays
the bare model (what checkpoints hold). Rank 0 alone writes files and logs; the bad-step decision, the
time budget (rank 0's clock) and the validation figures (summed over all shards) are shared, so the
processes stay in lockstep and stop together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from text_recognizer.checkpoint import (
    OUTPUT_KIND_OF_LOSS,
    Checkpoint,
    Decoding,
    Provenance,
    load_checkpoint,
    save_checkpoint,
)
from text_recognizer.codec import Codec
from text_recognizer.ctc import ctc_loss
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.ctc.loss import resolve_impl
from text_recognizer.data.checks import report_table
from text_recognizer.data.lines import collate_lines
from text_recognizer.decoding.greedy import ctc_decode
from text_recognizer.metrics import cer, line_cer, wer
from text_recognizer.models import build_model
from text_recognizer.models.growth import growth, new_block_names, zero_residual_branch
from training import distributed
from training.alphabet import remap_output_rows
from training.batching import EpochSampler, line_aspects
from training.compare_runs import OVERRIDES_FILE
from training.config import RESUME_OVERRIDE_FLAGS, ExperimentConfig, flat_settings, resume_changes
from training.data import Datasets, build_datasets
from training.device import autocast, check_precision, precision_advice, resolve_device
from training.ema import WeightAverage
from training.guard import COLLAPSE_SHARE, NonFiniteGuard, Problem, blank_share, collapse_advice
from training.loggers import JsonlLogger, Logger
from training.objective import compute_loss, forward, needed_frames, nll_loss
from training.optimization import make_optimizer, make_scheduler
from training.sortagrad import label_lengths
from training.threads import ThreadGovernor, parse_threads

#: Default parent of run directories, relative to the working directory (``training/logs`` in a checkout);
#: never inside the installed package.
LOG_ROOT = Path("training") / "logs"
COLLAPSE_PROBE_LINES = 32  # validation lines whose frames per needed frame the blank-collapse warning reports


class TrainingError(RuntimeError):
    """Training cannot continue (non-finite loss, bad resume state, ...)."""


@dataclass
class EvalResult:
    loss: float
    cer: float
    wer: float
    n: int
    references: list[str] = field(default_factory=list)
    predictions: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # e.g. val_interctc_<block>_loss / _cer per captured layer
    layer_predictions: dict = field(default_factory=dict)  # InterCTC metric name -> predictions (for merging)

    def metrics(self) -> dict:
        return {"val_loss": self.loss, "val_cer": self.cer, "val_wer": self.wer, "val_n": self.n, **self.extra}

    def in_dataset_order(self, order: list[int]) -> EvalResult:
        """The per-line lists put back in dataset order, for a loader that visited items in ``order``."""
        back = sorted(range(len(order)), key=order.__getitem__)
        return dataclasses.replace(
            self, references=[self.references[i] for i in back], predictions=[self.predictions[i] for i in back]
        )


@torch.no_grad()
def evaluate(
    model,
    loader,
    codec: Codec,
    device: torch.device,
    loss_kind: str = "ctc",
    ctc_impl: str = "auto",
    interctc: InterCTC | None = None,
) -> EvalResult:
    """Loss, corpus CER/WER and all predictions over a loader, in eval mode.

    With ``interctc`` the captured layers are also scored: ``val_interctc_<block>_loss`` and
    ``..._cer`` (greedy decoding of that layer through the output head) in ``EvalResult.extra``.
    """
    was_training = model.training
    model.eval()
    total_loss, total_lines, refs, preds = 0.0, 0, [], []
    names = interctc.metric_names(model) if interctc is not None else {}
    layer_loss = dict.fromkeys(names, 0.0)
    layer_preds: dict[int, list[str]] = {layer: [] for layer in names}
    for batch in loader:
        batch = batch.to(device)
        logits, captured = forward(model, batch, interctc)  # (B, T, C)
        frames = model.output_lengths(batch.widths)
        targets, lengths = batch.targets, batch.target_lengths.to(device)
        for layer, layer_logits in interctc.layer_logits(model, captured).items() if interctc is not None else ():
            value = ctc_loss(
                layer_logits, targets, frames.to(device), lengths, reduction="mean", zero_infinity=True, impl=ctc_impl
            )
            layer_loss[layer] += float(value) * len(batch.texts)
            layer_preds[layer].extend(line.text for line in ctc_decode(layer_logits, codec, frames))
        if loss_kind == "nll":
            loss = nll_loss(logits, batch, frames)
        else:
            loss = ctc_loss(
                logits, targets, frames.to(device), lengths, reduction="mean", zero_infinity=True, impl=ctc_impl
            )
        total_loss += float(loss) * len(batch.texts)
        total_lines += len(batch.texts)
        preds.extend(line.text for line in ctc_decode(logits, codec, frames, collapse_repeats=loss_kind == "ctc"))
        refs.extend(batch.texts)
    model.train(was_training)
    extra = {}
    for layer, name in names.items():
        extra[f"val_{name}_loss"] = layer_loss[layer] / max(total_lines, 1)
        extra[f"val_{name}_cer"] = cer(refs, layer_preds[layer])
    return EvalResult(
        loss=total_loss / max(total_lines, 1),
        cer=cer(refs, preds),
        wer=wer(refs, preds),
        n=total_lines,
        references=refs,
        predictions=preds,
        extra=extra,
        layer_predictions={name: layer_preds[layer] for layer, name in names.items()},
    )


def merge_shards(parts: list[EvalResult]) -> EvalResult:
    """One result from the results of disjoint shards (in visiting order): the same corpus CER/WER and
    mean loss as evaluating the whole set at once (edits and characters are summed over all lines)."""
    n = sum(p.n for p in parts)
    refs = [r for p in parts for r in p.references]
    preds = [r for p in parts for r in p.predictions]
    extra = {}
    for name in parts[0].layer_predictions:
        extra[f"val_{name}_loss"] = sum(p.extra[f"val_{name}_loss"] * p.n for p in parts) / max(n, 1)
        extra[f"val_{name}_cer"] = cer(refs, [x for p in parts for x in p.layer_predictions[name]])
    return EvalResult(
        loss=sum(p.loss * p.n for p in parts) / max(n, 1),
        cer=cer(refs, preds),
        wer=wer(refs, preds),
        n=n,
        references=refs,
        predictions=preds,
        extra=extra,
    )


def _rng_state(device: torch.device) -> dict:
    state = {
        "torch": torch.get_rng_state(),
        "python": list(random.getstate()[1]),
        "python_version": random.getstate()[0],
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate((state["python_version"], tuple(state["python"]), None))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _git_revision() -> str:
    """The code's git revision (with ``+dirty`` for uncommitted changes), or "" outside a git checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    if rev.returncode:
        return ""
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def default_run_name(config: ExperimentConfig) -> str:
    data = "synthetic" if "synthetic" in config.data.data else Path(config.data.data[0]).name
    return f"{config.model.kind}-{data}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def run_directory(config: ExperimentConfig) -> Path:
    """``--run-dir``, else ``training/logs/<--name>``, else a new ``training/logs/<model>-<data>-<time>``."""
    if config.run.run_dir:
        return Path(config.run.run_dir)
    if config.run.resume and not config.run.name:
        raise TrainingError("--resume needs the run to continue: --run-dir DIR (or --name NAME for training/logs/NAME)")
    return LOG_ROOT / (config.run.name or default_run_name(config))


def saved_config(run_dir: Path) -> ExperimentConfig:
    """The configuration a run in ``run_dir`` last trained with (from ``last.pt``): what ``--resume`` continues."""
    return _resume_point(Path(run_dir))[1]


def _resume_point(run_dir: Path) -> tuple[Checkpoint, ExperimentConfig]:
    bundle = load_checkpoint(run_dir / "last.pt", map_location="cpu")
    if bundle.train_state is None:
        raise TrainingError(f"{run_dir / 'last.pt'} has no training state to resume from")
    try:
        return bundle, ExperimentConfig.from_dict(bundle.provenance.recipe)
    except (KeyError, TypeError, ValueError) as error:
        raise TrainingError(f"{run_dir / 'last.pt'} holds no usable training configuration ({error})") from error


def _check_resume(run_dir: Path, config: ExperimentConfig, codec: Codec | None) -> tuple[Checkpoint, dict]:
    """``last.pt`` and the allowed overrides ``config`` makes to the run's saved configuration.

    Raises ``TrainingError`` naming every other difference (flag, saved value, given value).
    """
    bundle, saved = _resume_point(run_dir)
    allowed, refused = resume_changes(saved, config)
    if refused:
        listed = "; ".join(f"{flag} was {before!r}, given {after!r}" for flag, (before, after) in refused.items())
        raise TrainingError(
            f"cannot resume {run_dir} with a different configuration: {listed}. A resumed run keeps the configuration "
            f"it was started with; only these may change: {', '.join(RESUME_OVERRIDE_FLAGS)} "
            f"(README, 'Resuming a run'). Start a new run (or --init-from {run_dir / 'last.pt'}) to train differently."
        )
    if codec is not None and codec != bundle.codec:
        raise TrainingError(
            f"cannot resume {run_dir}: it was trained with the characters {bundle.codec.charset!r}, "
            f"given {codec.charset!r}"
        )
    return bundle, allowed


def _init_from(model: torch.nn.Module, config: ExperimentConfig, path: Path, codec: Codec | None = None) -> None:
    """Start from another checkpoint's weights (fine-tuning); the architectures must match, the alphabets
    may differ (the shared characters keep their output weights: training/alphabet.py), and the encoder may
    have more residual blocks (``--conv-blocks``, ``--lstm-layers``), which start as the identity."""
    theirs = load_checkpoint(path, map_location="cpu")
    their_config = theirs.model_config.to_dict()
    training_only = {"dropout", "stochastic_depth", "stochastic_depth_mode", "stochastic_depth_start"}  # no weights
    training_only.add("deslant")  # a stem setting: the same weights, fine-tuned to the sheared lines
    training_only.add("num_classes")  # follows the alphabet: the output rows are carried over by character below
    try:  # more blocks than the checkpoint: they start as the identity (text_recognizer/models/growth.py)
        grown = growth(theirs.model_config, config.model)
    except ValueError as error:
        raise TrainingError(f"--init-from {path}: {error}") from None
    differences = {
        k: (their_config[k], v)
        for k, v in config.model.to_dict().items()
        if k not in training_only and k not in grown and their_config[k] != v
    }
    if differences:
        raise TrainingError(f"--init-from {path}: its model differs from this run's in {differences} (theirs, ours)")
    state = theirs.build_model().state_dict()  # float32, in this version's parameter layout
    state, new = remap_output_rows(state, model.state_dict(), theirs.codec, codec or Codec())
    added = new_block_names(theirs.model_config, config.model)
    for name in added:
        block = model.encoder.blocks[name]
        zero_residual_branch(block)
        prefix = f"encoder.blocks.{name}."
        state.update({prefix + k: v for k, v in block.state_dict().items()})
    model.load_state_dict(state)
    print(f"initialised the model from {path}" + (f"; new characters start untrained: {''.join(new)!r}" if new else "")
          + (f"; new blocks start as the identity: {', '.join(added)}" if added else ""))


def _regulariser_info(model, config: ExperimentConfig, interctc: InterCTC | None) -> dict:
    """Stochastic-depth probabilities per block and InterCTC layers (printed; saved in config.json)."""
    info = {}
    if config.model.stochastic_depth > 0:
        probs = {name: round(block.drop_prob, 6) for name, block in model.encoder.blocks.items()}
        info["stochastic_depth_probs"] = probs
        print(
            f"stochastic depth ({config.model.stochastic_depth_mode}, max {config.model.stochastic_depth}, "
            f"from layer {config.model.stochastic_depth_start}): drop probabilities {probs}"
        )
    if interctc is not None:
        layers = {name: weight for name, weight in zip(interctc.block_names(model).values(), interctc.weights)}
        info["interctc_layers"] = layers
        print(f"InterCTC: weights {layers}, final layer {1 - sum(interctc.weights):g}")
    return info


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
    threads: ThreadGovernor | None = None  # torch's intra-op threads (--threads; training/threads.py)
    average: WeightAverage | None = None  # --ema-decay: the averaged weights that are validated and saved

    @property
    def shipped_model(self) -> torch.nn.Module:
        """The weights validation scores and ``best.pt`` holds: the average with ``--ema-decay``, else the model."""
        return self.average.model if self.average is not None else self.model

    @property
    def num_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def set_up_run(config: ExperimentConfig, loggers: list[Logger] | None = None, codec: Codec | None = None) -> Run:
    """Everything ``config`` asks for, ready to train; with ``--resume``, restored from ``<run-dir>/last.pt``.

    A resumed run takes the codec of its checkpoint, and ``config`` must be its saved configuration,
    changed only where ``training.config.RESUME_OVERRIDES`` allows; otherwise ``codec`` defaults to ``Codec()``.
    """
    device = distributed.setup(resolve_device(config.run.device))  # joins the process group under torchrun
    per_process = ("run.threads", "data.num_workers", "run.progress")  # may differ between ranks
    distributed.check_same_settings(flat_settings(config), may_differ=per_process)
    if config.run.loss == "ctc":
        resolve_impl(config.run.ctc_impl, device)  # fail early on an impossible choice
    check_precision(config.run.precision, device)
    if (advice := precision_advice(config.run.precision, device)) and distributed.is_main():
        print(advice, file=sys.stderr)
    run_dir = Path(distributed.broadcast(str(run_directory(config))))  # rank 0's name (it holds a timestamp)
    resume, overrides = _check_resume(run_dir, config, codec) if config.run.resume else (None, {})
    if resume is None and (run_dir / "last.pt").exists():
        raise TrainingError(f"{run_dir} already holds a run; pass --resume to continue it or choose another --run-dir")
    codec = resume.codec if resume is not None else codec or Codec()
    if config.model.num_classes != codec.num_classes:
        raise ValueError(f"model num_classes {config.model.num_classes} != codec's {codec.num_classes}")
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.run.seed)
    random.seed(config.run.seed)
    datasets = build_datasets(config.data, codec, config.model, config.run.seed)
    _print_data_checks(config, datasets)
    model = build_model(config.model).to(device)
    optimizer = make_optimizer(model, config)
    data = make_loaders(config, datasets)
    state = TrainState(world_size=distributed.world_size())
    budget = config.optim.max_minutes * 60
    planned = config.optim.max_steps or data.steps_per_epoch * config.optim.max_epochs
    scheduler = make_scheduler(optimizer, config, planned, (lambda: state.elapsed / budget) if budget else None)
    loggers = [JsonlLogger(run_dir), *(loggers or [])] if distributed.is_main() else []  # rank 0 writes
    interctc = InterCTC.from_settings(config.interctc.layers, config.interctc.weights)  # None when off
    dumps = {} if distributed.is_main() else {"max_dumps": 0}  # bad-step dumps: rank 0's
    guard = NonFiniteGuard(run_dir, config.run.max_bad_steps, loggers, **dumps)
    names = interctc.metric_names(model) if interctc is not None else {}
    run = Run(config, run_dir, device, codec, datasets, data, model, optimizer, scheduler, interctc, loggers, guard,
              state, git_rev=_git_revision(), interctc_names=names,
              train_model=distributed.wrap(model, device, find_unused=config.model.stochastic_depth > 0),
              scaler=torch.amp.GradScaler(device.type) if config.run.precision == "16-mixed" else None,
              threads=ThreadGovernor(fixed=parse_threads(config.run.threads)))
    if resume is not None:
        _restore(run, resume, overrides)
    elif config.run.init_from:
        _init_from(model, config, Path(config.run.init_from), codec)
    if config.optim.ema_decay:  # after the weights are restored or initialised: the average starts from them
        run.average = WeightAverage(model, config.optim.ema_decay)
        if resume is not None and "ema_state" in resume.train_state:
            run.average.load_state_dict(resume.train_state["ema_state"])
    _start_logging(run, fresh=resume is None)
    return run


def _print_data_checks(config: ExperimentConfig, datasets: Datasets) -> None:
    if datasets.reports:
        print(f"data check (--bad-samples {config.data.bad_samples}):\n{report_table(datasets.reports)}")
    if "synthetic" in config.data.data:
        print(
            "data check: synthetic lines are generated on the fly; CTC-infeasible ones are left out batch by batch "
            "(counted in summary.json as skipped_infeasible_in_batches)"
        )


def make_loaders(config: ExperimentConfig, datasets: Datasets) -> Loaders:
    """Training batches in (seed, epoch) order (SortaGrad, width buckets); validation by width, unshuffled."""
    bs, overfit = config.optim.batch_size, config.run.overfit_batches
    train_set, val_set = datasets.train, datasets.val
    if overfit:
        train_set = val_set = torch.utils.data.Subset(datasets.train, list(range(min(len(train_set), overfit * bs))))
        sampler = EpochSampler(len(train_set), config.run.seed, shuffle=False, batch_size=bs)
    else:
        widths = line_aspects(train_set) if config.data.bucket_batches else None
        lengths = None
        if config.optim.sortagrad:
            lengths = widths or line_aspects(train_set) or label_lengths(train_set)
            if lengths is None:
                print("note: --sortagrad: the line lengths of this training set cannot be read cheaply; "
                      "the first epoch is shuffled")
        sampler = EpochSampler(
            len(train_set),
            config.run.seed,
            sortagrad_lengths=lengths,
            widths=widths,
            batch_size=bs,
            chunk_batches=config.data.bucket_batches,
        )
    # Loaders get their own generators: creating an iterator draws a seed from the loader's generator,
    # which must not be the global RNG that dropout uses, or resuming would shift every draw after it.
    loader_args = {
        "collate_fn": collate_lines,
        "num_workers": config.data.num_workers,
        "persistent_workers": False,
        "generator": torch.Generator().manual_seed(config.run.seed),
    }
    val_widths = line_aspects(val_set) if config.data.bucket_batches and not overfit else None
    val_order = sorted(range(len(val_set)), key=val_widths.__getitem__) if val_widths else list(range(len(val_set)))
    val_shard = val_order[distributed.rank() :: distributed.world_size()]
    world = distributed.world_size()
    steps = math.ceil(len(train_set) / bs) // world if world > 1 else math.ceil(len(train_set) / bs)
    if steps == 0:
        raise TrainingError(f"{len(train_set)} training lines make {math.ceil(len(train_set) / bs)} batches of "
                            f"{bs}: fewer than the {world} processes; use fewer processes or a smaller --batch-size")
    return Loaders(
        train_set,
        val_set,
        sampler,
        DataLoader(train_set, batch_size=bs, sampler=sampler, drop_last=False, **loader_args),
        DataLoader(val_set, batch_size=max(bs, config.run.val_batch_size), sampler=val_shard, **loader_args),
        val_order,
        val_shard,
        steps_per_epoch=steps,
    )


def _restore(run: Run, bundle: Checkpoint, overrides: dict) -> None:
    """Weights, optimiser, schedule, counters and RNG from ``last.pt``; append this resume to the override history."""
    train_state = bundle.train_state
    run.model.load_state_dict(bundle.model_state)
    run.optimizer.load_state_dict(train_state["optimizer_state"])
    run.scheduler.load_state_dict(train_state["scheduler_state"])
    if run.scaler is not None and train_state.get("scaler_state"):
        run.scaler.load_state_dict(train_state["scaler_state"])
    vars(run.state).update(train_state["counters"])  # in place: the schedule's time budget reads this object
    _set_rng_state(train_state["rng"], run.device)
    saved_world, world = run.state.world_size, distributed.world_size()
    if saved_world != world:  # k steps on n processes trained the epoch's first k * n batches (shard_batches)
        run.state.batch_in_epoch = run.state.batch_in_epoch * saved_world // world
        run.state.world_size = world
        print(f"note: resuming a run of {saved_world} process(es) on {world}: the global batch changes "
              f"(--batch-size x processes); README 'Scaling out'")
    if not distributed.is_main():
        return
    record = {
        "resumed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "epoch": run.state.epoch,
        "step": run.state.step,
        "overrides": {
            flag: {"field": RESUME_OVERRIDE_FLAGS[flag], "saved": a, "given": b} for flag, (a, b) in overrides.items()
        },
    }
    with (run.run_dir / OVERRIDES_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    changed = "".join(f", {flag} {a!r} -> {b!r}" for flag, (a, b) in overrides.items())
    print(f"resumed {run.run_dir} at epoch {run.state.epoch}, step {run.state.step}{changed}")


def _start_logging(run: Run, fresh: bool) -> None:
    """``config.json`` (a fresh run's only: a resume never rewrites it), the loggers' start, the run's headline."""
    config, run_dir = run.config, run.run_dir
    for logger in run.loggers:
        logger.watch(run.model)
    regularisers = _regulariser_info(run.model, config, run.interctc)
    info = {
        "parameters": run.num_params,
        "size_mb": round(run.num_params * 4 / 2**20, 2),
        "device": str(run.device),
        "ctc_impl": resolve_impl(config.run.ctc_impl, run.device) if config.run.loss == "ctc" else "none",
        **regularisers,
    }
    if distributed.is_main() and (fresh or not (run_dir / "config.json").exists()):
        saved = {
            **config.to_dict(),
            "codec": run.codec.to_dict(),
            "data_description": run.datasets.description,
            **regularisers,
        }
        (run_dir / "config.json").write_text(json.dumps(saved, indent=2))
    for logger in run.loggers:
        logger.start(config.to_dict(), run_dir, info)
    print(
        f"run {run_dir}: {config.model.kind}, {run.num_params / 1e6:.2f} M parameters, {run.device}"
        + (f" x {distributed.world_size()} processes" if distributed.world_size() > 1 else "")
        + (f", {run.threads.threads} torch threads{' (auto)' if run.threads.adaptive else ''}" if run.threads else "")
        + ", "
        f"{len(run.data.train_set)} train / {len(run.data.val_set)} val lines, {run.data.steps_per_epoch} steps/epoch"
    )
    wanted = config.run.wandb_samples if len(run.loggers) > 1 else 0  # only JsonlLogger: no table to fill
    run.sample_images = [run.data.val_set[i].image for i in range(min(len(run.data.val_set), wanted))]


def run_checkpoint(run: Run, val_cer: float | None = None, with_train_state: bool = False,
                   shipped: bool = False) -> Checkpoint:
    """The run's model as a checkpoint bundle; ``with_train_state`` adds what ``--resume`` needs (``last.pt``).

    The weights are the raw ones (training continues from them; with ``--ema-decay`` the average rides
    in the train state), or with ``shipped`` the validated ones (``best.pt``: the average, if any).
    """
    config, state = run.config, run.state
    train_state = None
    if with_train_state:
        train_state = {
            "optimizer_state": run.optimizer.state_dict(),
            "scheduler_state": run.scheduler.state_dict(),
            "counters": dataclasses.asdict(state),
            "rng": _rng_state(run.device),
            **({"scaler_state": run.scaler.state_dict()} if run.scaler is not None else {}),
            **({"ema_state": run.average.state_dict()} if run.average is not None else {}),
        }
    return Checkpoint(
        model_config=config.model,
        codec=run.codec,
        model_state=(run.shipped_model if shipped else run.model).state_dict(),
        decoding=Decoding(OUTPUT_KIND_OF_LOSS[config.run.loss], "natural" if config.data.detokenize else "as_labelled"),
        provenance=Provenance(
            data=run.datasets.description,
            recipe=config.to_dict(),
            git_rev=run.git_rev,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            val_cer=val_cer,
            epoch=state.epoch,
            step=state.step,
        ),
        train_state=train_state,
    )


def save_last(run: Run, val_cer: float | None = None) -> None:
    if distributed.is_main():  # only rank 0 writes; every rank holds the same weights
        save_checkpoint(run_checkpoint(run, val_cer, with_train_state=True), run.run_dir / "last.pt")


def budget_spent(config: ExperimentConfig, state: TrainState) -> str:
    """Why training must stop mid-epoch ("" to go on): the step or time budget is spent."""
    o = config.optim
    if o.max_steps and state.step >= o.max_steps:
        return f"reached --max-steps {o.max_steps}"
    if o.max_minutes and state.elapsed >= o.max_minutes * 60:
        return f"reached --max-minutes {o.max_minutes}"
    return ""


def stop_reason(config: ExperimentConfig, state: TrainState) -> str:
    """Why training must stop before the next epoch ("" to go on): a budget, or early stopping."""
    if reason := budget_spent(config, state):
        return reason
    if config.run.early_stopping and state.epochs_without_improvement >= config.run.early_stopping:
        return f"early stopping: no val CER improvement for {config.run.early_stopping} epochs"
    if state.epoch >= config.optim.max_epochs:
        return f"reached --max-epochs {config.optim.max_epochs}"
    return ""


def train_one_step(run: Run, batch) -> float | None:
    """One optimiser step on ``batch``; the loss, or ``None`` when the non-finite guard skipped the step."""
    config, state, model = run.config, run.state, run.model
    step_start = time.monotonic()
    batch = batch.to(run.device)
    run.guard.before_step(model, _rng_state(run.device))
    with autocast(config.run.precision, run.device):
        loss, info = compute_loss(
            run.train_model or model, batch, config.run.loss, config.run.ctc_impl, run.interctc,
            label_smoothing=config.run.label_smoothing, ctc_reduction=config.run.ctc_reduction,
        )
    loss = loss.float()
    scaler = run.scaler
    run.optimizer.zero_grad(set_to_none=True)
    grad_norm = None
    finite = bool(torch.isfinite(loss))
    mean_loss = float("nan")
    if distributed.world_size() > 1:  # backward all-reduces gradients: every rank runs it, or none does
        summed = [float(not finite), info["used"], info["infeasible"], float(loss.detach()) if finite else 0.0]
        bad, used, infeasible, loss_sum = distributed.sum_all(summed)
        finite = bad == 0
        mean_loss = loss_sum / distributed.world_size()  # the global batch's loss (gradients are averaged too)
        info = {**info, "used": int(used), "infeasible": int(infeasible)}  # over all ranks
    if finite:  # a non-finite loss is not back-propagated; the guard skips the step
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(run.optimizer)
        else:
            loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip or float("inf"))
    problem = run.guard.check(model, loss, grad_norm)  # None, or why the step must be skipped
    if distributed.any_rank(problem is not None) and problem is None:  # another rank's bad step: skip it here too
        problem = Problem(float(loss.detach()), True, float(grad_norm) if grad_norm is not None else None,
                          ["(a bad step on another process)"])
    if scaler is not None and finite and problem is not None and problem.loss_finite:
        # float16 gradient overflow: the scaler skips this step and lowers its scale; not a bad step
        scaler.step(run.optimizer)  # skips the update (inf gradients found by unscale_)
        scaler.update()
        state.step += 1
        state.batch_in_epoch += 1
        return None
    if problem is None:
        run.guard.good_step()
        if scaler is not None:
            scaler.step(run.optimizer)
            scaler.update()
        else:
            run.optimizer.step()
        run.scheduler.step()
        if run.average is not None:
            run.average.update(model)
    state.step += 1
    state.batch_in_epoch += 1
    if problem is not None:
        _skip_bad_step(run, problem, batch)
        return None
    state.lines_seen += info["used"]
    state.skipped_infeasible += info["infeasible"]
    seconds = time.monotonic() - step_start
    state.train_seconds += seconds
    state.elapsed = _synced_elapsed(run)
    run.last_loss = mean_loss if distributed.world_size() > 1 else float(loss.detach())
    metrics = {
        "epoch": state.epoch + 1,
        "loss": run.last_loss,
        "lr": run.scheduler.get_last_lr()[0],
        "grad_norm": float(grad_norm),
        "lines_per_sec": len(batch.texts) / max(seconds, 1e-9),
        "threads": run.threads.threads if run.threads is not None else torch.get_num_threads(),
        "elapsed_minutes": state.elapsed / 60,
    }
    if "smoothing_loss" in info:  # the plain CTC term stays comparable with unsmoothed runs
        metrics["ctc_loss"], metrics["smoothing_loss"] = info["ctc_loss"], info["smoothing_loss"]
    if "interctc" in info:
        metrics["final_loss"] = info["final_loss"]
        metrics.update({f"{run.interctc_names[layer]}_loss": value for layer, value in info["interctc"].items()})
    for logger in run.loggers:
        logger.log_train(state.step, metrics)
    return run.last_loss


def _follow_free_cores(run: Run) -> None:
    """``--threads auto``: fewer torch threads while other processes take CPU, more when they stop."""
    if run.threads is None:
        return
    changed = run.threads.update()
    if changed is not None:
        tqdm.write(f"note: other processes used {run.threads.others_cores:.1f} of {run.threads.cores} cores; "
                   f"torch threads -> {changed} (--threads auto)")


def _synced_elapsed(run: Run) -> float:
    """Seconds since the run began, rank 0's on every rank: the time budget and the schedule must agree."""
    elapsed = time.monotonic() - run.start_time
    if distributed.world_size() > 1:
        elapsed = distributed.sum_all([elapsed if distributed.is_main() else 0.0])[0]
    return elapsed


def _skip_bad_step(run: Run, problem: Problem, batch) -> None:
    """Count and dump a skipped step; after too many in a row save ``last.pt`` and stop the run."""
    state = run.state
    state.bad_steps += 1
    run.guard.record(
        problem,
        model=run.model,
        optimizer=run.optimizer,
        batch=batch,
        step=state.step,
        epoch=state.epoch + 1,
        batch_in_epoch=state.batch_in_epoch,
        total_bad=state.bad_steps,
        bundle=run_checkpoint(run),
        checkpoint=run.run_dir / "last.pt",
    )
    if run.guard.should_stop():
        save_last(run)
        raise TrainingError(run.guard.stop_message(state.step, run.run_dir / "last.pt"))


def train_one_epoch(run: Run) -> str:
    """Train the rest of the current epoch; return why training must stop mid-epoch ("" when the epoch ended).

    The epoch counts as done (``state.epoch`` moves on) when all its batches were trained.
    """
    config, state = run.config, run.state
    run.data.sampler.set_epoch(state.epoch, skip=state.batch_in_epoch * config.optim.batch_size)
    run.model.train()
    bar = tqdm(
        run.data.train,
        total=run.data.steps_per_epoch,
        initial=state.batch_in_epoch,
        desc=f"epoch {state.epoch + 1}",
        disable=not config.run.progress or not distributed.is_main(),
        leave=False,
        dynamic_ncols=True,
    )
    stop = ""
    for batch in bar:
        loss = train_one_step(run, batch)
        _follow_free_cores(run)
        if loss is not None:
            bar.set_postfix(loss=f"{loss:.3f}")
        if config.run.checkpoint_every and state.step % config.run.checkpoint_every == 0:
            save_last(run)
        if stop := budget_spent(config, state):
            break
    bar.close()
    if not stop or state.batch_in_epoch >= run.data.steps_per_epoch:
        state.epoch += 1
        state.batch_in_epoch = 0
    return stop


def validate_and_checkpoint(run: Run) -> EvalResult:
    """Evaluate on the validation set, log it, save ``last.pt`` and, when the CER improved, ``best.pt``."""
    config, state = run.config, run.state
    result = evaluate(
        run.shipped_model, run.data.val, run.codec, run.device, config.run.loss, config.run.ctc_impl, run.interctc
    )
    if distributed.world_size() > 1:  # each rank scored a shard: combine them into the whole set's figures
        world = distributed.world_size()
        result = merge_shards(distributed.gather(result))
        visited = [i for r in range(world) for i in run.data.val_order[r::world]]
        result = result.in_dataset_order(visited)
    else:
        result = result.in_dataset_order(run.data.val_order)
    state.elapsed = _synced_elapsed(run)
    improved = result.cer < state.best_cer
    if improved:
        state.best_cer, state.best_epoch = result.cer, state.epoch
    state.epochs_without_improvement = state.epoch - state.best_epoch  # in epochs, whatever --val-every is
    state.last_val_cer, state.last_val_wer = result.cer, result.wer
    shown = max(16, len(run.sample_images))
    samples = [
        {
            "reference": r,
            "prediction": p,
            "cer": line_cer(r, p),
            **({"image": run.sample_images[i]} if i < len(run.sample_images) else {}),
        }
        for i, (r, p) in enumerate(list(zip(result.references, result.predictions))[:shown])
    ]
    for logger in run.loggers:
        logger.log_val(
            state.epoch,
            state.step,
            {**result.metrics(), "best_val_cer": state.best_cer, "elapsed_minutes": state.elapsed / 60},
            samples,
        )
    print(
        f"epoch {state.epoch:3d} step {state.step:6d} | train loss {run.last_loss:.3f} | val loss {result.loss:.3f} "
        f"cer {result.cer:.4f} wer {result.wer:.4f} | best {state.best_cer:.4f} | {state.elapsed / 60:.1f} min"
    )
    _watch_blank_collapse(run, result)
    save_last(run, result.cer if run.average is None else None)  # the CER scored the average, not last.pt's weights
    if improved and distributed.is_main():
        save_checkpoint(run_checkpoint(run, result.cer, shipped=True), run.run_dir / "best.pt")
        for logger in run.loggers:
            logger.log_checkpoint(run.run_dir / "best.pt", True, result.metrics())
    return result


def _watch_blank_collapse(run: Run, result: EvalResult) -> None:
    """Count validations whose predictions are (almost) all blank; warn every ``--blank-collapse-epochs`` in a row."""
    config, state = run.config, run.state
    share = blank_share(result.references, result.predictions)
    state.blank_epochs = state.blank_epochs + 1 if share >= COLLAPSE_SHARE else 0
    every = config.run.blank_collapse_epochs
    if not every or config.run.loss != "ctc" or not state.blank_epochs or state.blank_epochs % every:
        return
    samples = [run.data.val_set[i] for i in range(min(COLLAPSE_PROBE_LINES, len(run.data.val_set)))]
    frames = run.model.output_lengths(torch.tensor([s.image.shape[-1] for s in samples], dtype=torch.int64))
    needed = int(needed_frames([s.text for s in samples]).clamp_min(1).sum())
    ratio = float(frames.sum()) / needed if samples else None
    print(collapse_advice(config, state.blank_epochs, state.step, share, ratio))
    for logger in run.loggers:
        logger.log_event(
            state.step,
            {
                "event": "blank_collapse",
                "epochs": state.blank_epochs,
                "blank_share": share,
                "frames_per_needed_frame": ratio,
            },
        )


def finish_run(run: Run, stop_reason: str) -> dict:
    """Write ``summary.json``, close the loggers, and return the summary."""
    state, run_dir = run.state, run.run_dir
    summary = {
        "run_dir": str(run_dir),
        "best_checkpoint": str(run_dir / "best.pt"),
        "last_checkpoint": str(run_dir / "last.pt"),
        "best_val_cer": state.best_cer if state.best_epoch >= 0 else None,
        "best_epoch": state.best_epoch,
        "final_val_cer": state.last_val_cer,
        "final_val_wer": state.last_val_wer,
        "epochs": state.epoch,
        "steps": state.step,
        "elapsed_minutes": round(state.elapsed / 60, 3),
        "train_lines_per_sec": round(state.lines_seen / max(state.train_seconds, 1e-9), 2),
        "skipped_infeasible_in_batches": state.skipped_infeasible,
        "bad_steps": state.bad_steps,
        "data_checks": {k: v.to_dict() for k, v in run.datasets.reports.items()},
        "stop_reason": stop_reason,
        "parameters": run.num_params,
        "device": str(run.device),
        "world_size": distributed.world_size(),
        "global_batch_size": run.config.optim.batch_size * distributed.world_size(),
    }
    if distributed.is_main():
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    for logger in run.loggers:
        logger.finish(summary)
    return summary


_SIGTERM_RECEIVED = threading.Event()  # under torchrun a stopping peer can break a collective before ours arrives


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Treat SIGTERM like Ctrl-C while training: schedulers, ``timeout`` and ``docker stop`` send it,
    and a run stopped that way must save ``last.pt`` like an interrupted one. Only the main thread
    can install signal handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        _SIGTERM_RECEIVED.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def fit(config: ExperimentConfig, loggers: list[Logger] | None = None, codec: Codec | None = None) -> dict:
    """Train a model as ``config`` says; return the summary (also written to ``summary.json``).

    Validation runs every ``--val-every`` epochs and whenever training stops; Ctrl-C or SIGTERM
    saves ``last.pt``.
    """
    run = set_up_run(config, loggers, codec)
    config, state = run.config, run.state
    run.start_time = time.monotonic() - state.elapsed
    stop = stop_reason(config, state)  # a resumed run may have nothing left to do
    with sigterm_as_interrupt():
        try:
            while not stop:
                stop = train_one_epoch(run)
                if stop or state.epoch >= config.optim.max_epochs or state.epoch % config.run.val_every == 0:
                    validate_and_checkpoint(run)
                else:
                    save_last(run)
                stop = stop or stop_reason(config, state)
        except (KeyboardInterrupt, RuntimeError) as error:
            # under torchrun SIGTERM reaches every rank; one inside a collective sees its peer leave as an error
            stopped_peer = isinstance(error, RuntimeError) and distributed.active() and _SIGTERM_RECEIVED.is_set()
            if not isinstance(error, KeyboardInterrupt) and not stopped_peer:
                raise
            save_last(run)
            stop = "interrupted"
            print(f"interrupted at step {state.step}; resume with --resume --run-dir {run.run_dir}")
    return finish_run(run, stop)
