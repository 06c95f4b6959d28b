"""Building a run from its configuration: device, run directory, data, model, optimiser, schedule,
guard and loggers, restored from ``last.pt`` with ``--resume`` (``training/loop/checkpointing.py``).

Everything that can refuse the configuration (device, precision, CTC implementation, an existing run,
the alphabet, too few batches for the processes) is checked here, before the first step, so that a
refused run fails in seconds. A fresh run writes ``config.json`` (the configuration it started with
and the data it read; a resume never rewrites it).

Under ``torchrun`` every rank builds the same run from the same settings (checked), with rank 0's
run directory name; rank 0 alone writes files and logs.
"""

from __future__ import annotations

import json
import math
import random
import sys
from datetime import datetime
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from text_recognizer.codec import Codec
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.ctc.loss import resolve_impl
from text_recognizer.data.checks import report_table
from text_recognizer.data.lines import collate_lines
from text_recognizer.models import build_model
from training.loop import distributed
from training.loop.batching import EpochSampler, line_aspects
from training.loop.checkpointing import check_resume, git_revision, init_from, load_teacher, restore
from training.loop.config import ExperimentConfig, flat_settings
from training.loop.data import Datasets, build_datasets
from training.loop.device import check_precision, precision_advice, resolve_device
from training.loop.ema import WeightAverage
from training.loop.guard import NonFiniteGuard
from training.loop.loggers import JsonlLogger, Logger
from training.loop.optimization import make_optimizer, make_scheduler
from training.loop.run_state import Loaders, Run, TrainingError, TrainState
from training.loop.sortagrad import label_lengths
from training.loop.threads import ThreadGovernor, parse_threads

#: Default parent of run directories, relative to the working directory (``training/logs`` in a checkout);
#: never inside the installed package.
LOG_ROOT = Path("training") / "logs"


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


def set_up_run(config: ExperimentConfig, loggers: list[Logger] | None = None, codec: Codec | None = None) -> Run:
    """Everything ``config`` asks for, ready to train; with ``--resume``, restored from ``<run-dir>/last.pt``.

    A resumed run takes the codec of its checkpoint, and ``config`` must be its saved configuration,
    changed only where ``training.loop.config.RESUME_OVERRIDES`` allows; otherwise ``codec`` defaults to ``Codec()``.
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
    resume, overrides = check_resume(run_dir, config, codec) if config.run.resume else (None, {})
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
              state, git_rev=git_revision(), interctc_names=names,
              train_model=distributed.wrap(model, device, find_unused=config.model.stochastic_depth > 0),
              scaler=torch.amp.GradScaler(device.type) if config.run.precision == "16-mixed" else None,
              threads=ThreadGovernor(fixed=parse_threads(config.run.threads)))
    if resume is not None:
        restore(run, resume, overrides)
    elif config.run.init_from:
        init_from(model, config, Path(config.run.init_from), codec)
    if config.run.distill_from:
        run.teacher = load_teacher(Path(config.run.distill_from), model, codec, device)
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
