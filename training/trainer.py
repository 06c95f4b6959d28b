"""The training loop: ``train_one_epoch``, ``evaluate`` and ``fit`` as plain functions.

``fit`` owns the run directory (``config.json``, ``metrics.jsonl``, ``last.pt``, ``best.pt``,
``summary.json``). Data order is a pure function of (seed, epoch), so a run resumed from
``last.pt`` (saved at epoch ends, every ``--checkpoint-every`` steps and on Ctrl-C) continues
with exactly the batches, random state and optimiser state it would have had.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Sampler
from tqdm import tqdm

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.ctc import ctc_decode, ctc_loss, required_frames
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.ctc.loss import resolve_impl
from text_recognizer.data.checks import report_table
from text_recognizer.data.lines import LineBatch, collate_lines
from text_recognizer.metrics import cer, line_cer, wer
from text_recognizer.models import build_model
from training.alphabet import remap_output_rows
from training.batching import bucketed_order, line_aspects
from training.config import ExperimentConfig
from training.data import build_datasets
from training.guard import COLLAPSE_SHARE, NonFiniteGuard, blank_share, collapse_advice
from training.loggers import JsonlLogger, Logger
from training.sortagrad import label_lengths

LOG_ROOT = Path(__file__).parent / "logs"


class TrainingError(RuntimeError):
    """Training cannot continue (non-finite loss, bad resume state, ...)."""


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: CUDA is not available on this machine")
    return device


class EpochSampler(Sampler[int]):
    """Shuffled indices whose order depends only on (seed, epoch); can start mid-epoch.

    With ``sortagrad_lengths`` (a length per item: image width, else label length) epoch 0 runs
    from short lines to long ones (SortaGrad; ties keep their shuffled order). With ``widths``
    the other epochs are width-bucketed (``training/batching.py``: batches of similar widths, in
    random order), else plainly shuffled.
    """

    def __init__(self, size: int, seed: int, shuffle: bool = True, sortagrad_lengths: list[int] | list[float] | None = None,
                 widths: list[float] | None = None, batch_size: int = 1, chunk_batches: int = 0):
        self.size, self.seed, self.shuffle = size, seed, shuffle
        self.epoch, self.skip = 0, 0
        self.lengths = sortagrad_lengths
        self.widths, self.batch_size, self.chunk_batches = widths, batch_size, chunk_batches

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.epoch, self.skip = epoch, skip

    def __iter__(self):
        if self.shuffle:
            generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
            order = torch.randperm(self.size, generator=generator).tolist()
            if self.epoch == 0 and self.lengths is not None:
                order.sort(key=self.lengths.__getitem__)  # stable: ties keep their shuffled order
            elif self.widths is not None and self.chunk_batches:
                order = bucketed_order(order, self.widths, self.batch_size, self.chunk_batches, generator)
        else:
            order = list(range(self.size))
        return iter(order[self.skip :])

    def __len__(self) -> int:
        return self.size - self.skip


def make_optimizer(model: torch.nn.Module, config: ExperimentConfig) -> torch.optim.Optimizer:
    o = config.optim
    if o.optimizer == "rmsprop":
        return torch.optim.RMSprop(model.parameters(), lr=o.lr, weight_decay=o.weight_decay, alpha=0.99, eps=1e-8)
    if o.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)


def make_scheduler(optimizer: torch.optim.Optimizer, config: ExperimentConfig, total_steps: int, time_progress=None):
    """Linear warm-up, then constant (``none``), cosine decay or a one-cycle-like ramp down to 0.

    Progress through the schedule is counted in steps out of ``total_steps``; with a time budget
    (``--max-minutes``) ``time_progress()`` (elapsed / budget) is used too, whichever is further,
    so a run stopped by its budget has finished its decay instead of stopping at a high rate.
    """
    o = config.optim
    warmup = max(0, o.warmup_steps)
    total = max(total_steps, warmup + 1)

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        if time_progress is not None:
            progress = max(progress, min(1.0, time_progress()))
        if o.lr_schedule == "cosine":
            return 0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * progress))
        if o.lr_schedule == "onecycle":
            return max(0.0, 1.0 - progress)
        return 1.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def compute_loss(model, batch: LineBatch, loss_kind: str, ctc_impl: str, interctc: InterCTC | None = None) -> tuple[torch.Tensor, dict]:
    """Loss of one batch and facts about it. Infeasible CTC samples are left out and counted.

    With ``interctc`` the loss is InterCTC's weighted total and ``info["interctc"]`` maps each
    captured layer to its own loss (a float), ``info["final_loss"]`` holds the final layer's.
    """
    if interctc is not None:
        with interctc.capture(model) as captured:
            logits = model(batch.images, batch.widths)  # (B, T, C); fills captured
    else:
        logits = model(batch.images, batch.widths)  # (B, T, C)
    frames = model.output_lengths(batch.widths)  # (B,)
    if loss_kind == "nll":
        return _nll_loss(logits, batch, frames), {"used": len(batch.texts), "infeasible": 0}
    needed = torch.tensor([required_frames(t) for t in batch.texts])
    feasible = frames >= needed
    used = int(feasible.sum())
    if used == 0:
        return logits.sum() * 0.0, {"used": 0, "infeasible": len(batch.texts)}
    rows = feasible.nonzero().flatten()
    idx = rows.to(logits.device)
    loss = ctc_loss(
        logits[idx], batch.targets[idx], frames[rows].to(logits.device), batch.target_lengths[rows].to(logits.device),
        reduction="mean", impl=ctc_impl,
    )
    info = {"used": used, "infeasible": len(batch.texts) - used}
    if interctc is not None:
        layer_losses = interctc.layer_losses(
            model, captured, batch.targets[idx], frames[rows].to(logits.device), batch.target_lengths[rows].to(logits.device),
            rows=idx, reduction="mean", impl=ctc_impl,
        )
        info["final_loss"] = float(loss.detach())
        info["interctc"] = {layer: float(value.detach()) for layer, value in layer_losses.items()}
        loss = interctc.combine(loss, layer_losses)
    return loss, info


def _nll_loss(logits: torch.Tensor, batch: LineBatch, frames: torch.Tensor) -> torch.Tensor:
    """Per-window cross-entropy: frame k predicts character k, later frames predict padding (0)."""
    b, t, _ = logits.shape
    target = torch.zeros(b, t, dtype=torch.int64)
    for i in range(b):
        n = min(int(batch.target_lengths[i]), t)
        target[i, :n] = batch.targets[i, :n].cpu()
        target[i, int(frames[i]) :] = -100  # frames past the image are not scored
    return F.cross_entropy(logits.transpose(1, 2), target.to(logits.device), ignore_index=-100)  # (B, C, T) vs (B, T)


@dataclass
class EvalResult:
    loss: float
    cer: float
    wer: float
    n: int
    references: list[str] = field(default_factory=list)
    predictions: list[str] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # e.g. val_interctc_<block>_loss / _cer per captured layer

    def metrics(self) -> dict:
        return {"val_loss": self.loss, "val_cer": self.cer, "val_wer": self.wer, "val_n": self.n, **self.extra}

    def in_dataset_order(self, order: list[int]) -> EvalResult:
        """The per-line lists put back in dataset order, for a loader that visited items in ``order``."""
        back = sorted(range(len(order)), key=order.__getitem__)
        return dataclasses.replace(self, references=[self.references[i] for i in back],
                                   predictions=[self.predictions[i] for i in back],
                                   confidences=[self.confidences[i] for i in back])


@torch.no_grad()
def evaluate(model, loader, codec: Codec, device: torch.device, loss_kind: str = "ctc", ctc_impl: str = "auto",
             interctc: InterCTC | None = None) -> EvalResult:
    """Loss, corpus CER/WER and all predictions over a loader, in eval mode.

    With ``interctc`` the captured layers are also scored: ``val_interctc_<block>_loss`` and
    ``..._cer`` (greedy decoding of that layer through the output head) in ``EvalResult.extra``.
    """
    was_training = model.training
    model.eval()
    total_loss, total_lines = 0.0, 0
    refs, preds, confs = [], [], []
    names = interctc.metric_names(model) if interctc is not None else {}
    layer_loss = dict.fromkeys(names, 0.0)
    layer_preds: dict[int, list[str]] = {layer: [] for layer in names}
    for batch in loader:
        batch = batch.to(device)
        if interctc is not None:
            with interctc.capture(model) as captured:
                logits = model(batch.images, batch.widths)  # (B, T, C); fills captured
        else:
            logits = model(batch.images, batch.widths)  # (B, T, C)
        frames = model.output_lengths(batch.widths)
        if interctc is not None:
            for layer, layer_logits in interctc.layer_logits(model, captured).items():
                value = ctc_loss(layer_logits, batch.targets, frames.to(device), batch.target_lengths.to(device),
                                 reduction="mean", zero_infinity=True, impl=ctc_impl)
                layer_loss[layer] += float(value) * len(batch.texts)
                layer_preds[layer].extend(line.text for line in ctc_decode(layer_logits, codec, frames))
        if loss_kind == "nll":
            loss = _nll_loss(logits, batch, frames)
        else:
            loss = ctc_loss(logits, batch.targets, frames.to(device), batch.target_lengths.to(device),
                            reduction="mean", zero_infinity=True, impl=ctc_impl)
        total_loss += float(loss) * len(batch.texts)
        total_lines += len(batch.texts)
        for line in ctc_decode(logits, codec, frames, collapse_repeats=loss_kind == "ctc"):
            preds.append(line.text)
            confs.append(line.confidence)
        refs.extend(batch.texts)
    model.train(was_training)
    extra = {}
    for layer, name in names.items():
        extra[f"val_{name}_loss"] = layer_loss[layer] / max(total_lines, 1)
        extra[f"val_{name}_cer"] = cer(refs, layer_preds[layer])
    return EvalResult(
        loss=total_loss / max(total_lines, 1), cer=cer(refs, preds), wer=wer(refs, preds), n=total_lines,
        references=refs, predictions=preds, confidences=confs, extra=extra,
    )


def _rng_state(device: torch.device) -> dict:
    state = {"torch": torch.get_rng_state(), "python": list(random.getstate()[1]), "python_version": random.getstate()[0]}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate((state["python_version"], tuple(state["python"]), None))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _init_from(model: torch.nn.Module, config: ExperimentConfig, path: Path, codec: Codec | None = None) -> None:
    """Start from another checkpoint's weights (fine-tuning); the architectures must match, the alphabets
    may differ (the shared characters keep their output weights: training/alphabet.py)."""
    payload = load_checkpoint(path, map_location="cpu")
    theirs = dict(payload["model_config"])
    ours = config.model.to_dict()
    training_only = {"dropout", "stochastic_depth", "stochastic_depth_mode", "stochastic_depth_start"}  # no weights
    training_only.add("num_classes")  # follows the alphabet, checked below
    differences = {k: (theirs.get(k), v) for k, v in ours.items() if k not in training_only and theirs.get(k) != v}
    if differences:
        raise TrainingError(f"--init-from {path}: its model differs from this run's in {differences} (theirs, ours)")
    state = {k: v.float() if v.is_floating_point() else v for k, v in payload["model_state"].items()}
    state, new = remap_output_rows(state, model.state_dict(), Codec.from_dict(payload["codec"]), codec or Codec())
    model.load_state_dict(state)
    print(f"initialised the model from {path}" + (f"; new characters start untrained: {''.join(new)!r}" if new else ""))


def _regulariser_info(model, config: ExperimentConfig, interctc: InterCTC | None) -> dict:
    """Stochastic-depth probabilities per block and InterCTC layers (printed; saved in config.json)."""
    info = {}
    if config.model.stochastic_depth > 0:
        probs = {name: round(block.drop_prob, 6) for name, block in model.encoder.blocks.items()}
        info["stochastic_depth_probs"] = probs
        print(f"stochastic depth ({config.model.stochastic_depth_mode}, max {config.model.stochastic_depth}, "
              f"from layer {config.model.stochastic_depth_start}): drop probabilities {probs}")
    if interctc is not None:
        layers = {name: weight for name, weight in zip(interctc.block_names(model).values(), interctc.weights)}
        info["interctc_layers"] = layers
        print(f"InterCTC: weights {layers}, final layer {1 - sum(interctc.weights):g}")
    return info


def default_run_name(config: ExperimentConfig) -> str:
    data = "synthetic" if "synthetic" in config.data.data else Path(config.data.data[0]).name
    return f"{config.model.kind}-{data}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


@dataclass
class TrainState:
    epoch: int = 0
    batch_in_epoch: int = 0
    step: int = 0
    best_cer: float = float("inf")
    best_epoch: int = -1
    epochs_without_improvement: int = 0
    elapsed: float = 0.0
    lines_seen: int = 0
    skipped_infeasible: int = 0
    train_seconds: float = 0.0
    bad_steps: int = 0  # training steps skipped by the non-finite guard
    blank_epochs: int = 0  # consecutive validations whose predictions were (almost) all blank


def _watch_blank_collapse(config: ExperimentConfig, state: TrainState, result: EvalResult, model, val_set, loggers) -> None:
    """Count validations whose predictions are (almost) all blank; warn every ``--blank-collapse-epochs`` in a row."""
    share = blank_share(result.references, result.predictions)
    state.blank_epochs = state.blank_epochs + 1 if share >= COLLAPSE_SHARE else 0
    every = config.run.blank_collapse_epochs
    if not every or config.run.loss != "ctc" or not state.blank_epochs or state.blank_epochs % every:
        return
    samples = [val_set[i] for i in range(min(32, len(val_set)))]
    frames = model.output_lengths(torch.tensor([s.image.shape[-1] for s in samples], dtype=torch.int64))
    needed = sum(max(1, required_frames(s.text)) for s in samples)
    ratio = float(frames.sum()) / needed if samples else None
    print(collapse_advice(config, state.blank_epochs, state.step, share, ratio))
    for logger in loggers:
        logger.log_event(state.step, {"event": "blank_collapse", "epochs": state.blank_epochs, "blank_share": share,
                                      "frames_per_needed_frame": ratio})


def fit(config: ExperimentConfig, loggers: list[Logger] | None = None, codec: Codec | None = None) -> dict:
    """Train a model as ``config`` says; return the summary (also written to ``summary.json``)."""
    codec = codec or Codec()
    if config.model.num_classes != codec.num_classes:
        raise ValueError(f"model num_classes {config.model.num_classes} != codec's {codec.num_classes}")
    device = resolve_device(config.run.device)
    ctc_impl = config.run.ctc_impl
    if config.run.loss == "ctc":
        resolve_impl(ctc_impl, device)  # fail early on an impossible choice
    interctc = InterCTC.from_settings(config.interctc.layers, config.interctc.weights)  # None when off
    run_dir = Path(config.run.run_dir) if config.run.run_dir else LOG_ROOT / (config.run.name or default_run_name(config))
    resume_payload = None
    if config.run.resume:
        resume_payload = load_checkpoint(run_dir / "last.pt", map_location="cpu")
        if "train_state" not in resume_payload:
            raise TrainingError(f"{run_dir / 'last.pt'} has no training state to resume from")
    elif (run_dir / "last.pt").exists():
        raise TrainingError(f"{run_dir} already holds a run; pass --resume to continue it or choose another --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(config.run.seed)
    random.seed(config.run.seed)
    datasets = build_datasets(config.data, codec, config.model, config.run.seed)
    if datasets.reports:
        print(f"data check (--bad-samples {config.data.bad_samples}):\n{report_table(datasets.reports)}")
    if "synthetic" in config.data.data:
        print("data check: synthetic lines are generated on the fly; CTC-infeasible ones are left out batch by batch "
              "(counted in summary.json as skipped_infeasible_in_batches)")
    model = build_model(config.model).to(device)
    optimizer = make_optimizer(model, config)
    bs = config.optim.batch_size
    widths = line_aspects(datasets.train) if config.data.bucket_batches and not config.run.overfit_batches else None
    lengths = None
    if config.optim.sortagrad and not config.run.overfit_batches:
        lengths = widths or line_aspects(datasets.train) or label_lengths(datasets.train)
        if lengths is None:
            print("note: --sortagrad: the line lengths of this training set cannot be read cheaply; the first epoch is shuffled")
    sampler = EpochSampler(len(datasets.train), config.run.seed, shuffle=config.run.overfit_batches == 0, sortagrad_lengths=lengths,
                           widths=widths, batch_size=bs, chunk_batches=config.data.bucket_batches)
    train_set = datasets.train
    val_set = datasets.val
    if config.run.overfit_batches:
        subset = list(range(min(len(train_set), config.run.overfit_batches * bs)))
        train_set = torch.utils.data.Subset(datasets.train, subset)
        val_set = train_set
        sampler = EpochSampler(len(train_set), config.run.seed, shuffle=False)
    # Loaders get their own generators: creating an iterator draws a seed from the loader's generator,
    # which must not be the global RNG that dropout uses, or resuming would shift every draw after it.
    loader_args = {"collate_fn": collate_lines, "num_workers": config.data.num_workers, "persistent_workers": False,
                   "generator": torch.Generator().manual_seed(config.run.seed)}
    train_loader = DataLoader(train_set, batch_size=bs, sampler=sampler, drop_last=False, **loader_args)
    # Validation visits lines by width (less padding); results are put back in dataset order.
    val_widths = line_aspects(val_set) if config.data.bucket_batches and not config.run.overfit_batches else None
    val_order = sorted(range(len(val_set)), key=val_widths.__getitem__) if val_widths else list(range(len(val_set)))
    val_loader = DataLoader(val_set, batch_size=max(bs, 32), sampler=val_order, **loader_args)
    steps_per_epoch = math.ceil(len(train_set) / bs)
    planned = config.optim.max_steps or steps_per_epoch * config.optim.max_epochs
    state = TrainState()
    budget = config.optim.max_minutes * 60
    scheduler = make_scheduler(optimizer, config, planned, (lambda: state.elapsed / budget) if budget else None)

    if config.run.init_from and resume_payload is None:
        _init_from(model, config, Path(config.run.init_from), codec)
    if resume_payload is not None:
        saved = ExperimentConfig.from_dict(resume_payload["config"])
        if saved.model != config.model:
            raise TrainingError(f"cannot resume {run_dir}: its model config {saved.model} differs from {config.model}")
        model.load_state_dict(resume_payload["model_state"])
        ts = resume_payload["train_state"]
        optimizer.load_state_dict(ts["optimizer_state"])
        scheduler.load_state_dict(ts["scheduler_state"])
        state.__dict__.update(ts["counters"])
        _set_rng_state(ts["rng"], device)
        print(f"resumed {run_dir} at epoch {state.epoch}, step {state.step}")

    loggers = [JsonlLogger(run_dir), *(loggers or [])]
    guard = NonFiniteGuard(run_dir, config.run.max_bad_steps, loggers)
    for logger in loggers:
        logger.watch(model)
    num_params = sum(p.numel() for p in model.parameters())
    model_info = {"parameters": num_params, "size_mb": round(num_params * 4 / 2**20, 2), "ctc_impl": resolve_impl(ctc_impl, device) if config.run.loss == "ctc" else "none", "device": str(device)}
    regularisers = _regulariser_info(model, config, interctc)
    interctc_names = interctc.metric_names(model) if interctc is not None else {}  # layer -> interctc_<block>
    model_info.update(regularisers)
    (run_dir / "config.json").write_text(json.dumps({**config.to_dict(), "codec": codec.to_dict(), "data_description": datasets.description, **regularisers}, indent=2))
    for logger in loggers:
        logger.start(config.to_dict(), run_dir, model_info)
    print(f"run {run_dir}: {config.model.kind}, {num_params / 1e6:.2f} M parameters, {device}, "
          f"{len(train_set)} train / {len(val_set)} val lines, {steps_per_epoch} steps/epoch")

    def checkpoint_payload(val_cer: float | None) -> dict:
        return {
            "model_config": config.model.to_dict(), "codec": codec.to_dict(), "loss": config.run.loss,
            "model_state": {k: v.detach().cpu() for k, v in model.state_dict().items()}, "config": config.to_dict(),
            "metadata": {"data": datasets.description, "val_cer": val_cer, "epoch": state.epoch, "step": state.step},
        }

    def save_last(val_cer: float | None = None) -> None:
        payload = checkpoint_payload(val_cer)
        payload["train_state"] = {
            "optimizer_state": optimizer.state_dict(), "scheduler_state": scheduler.state_dict(),
            "counters": dict(state.__dict__), "rng": _rng_state(device),
        }
        save_checkpoint(payload, run_dir / "last.pt")

    # Preprocessed images (1, H, W) ink-high of the first validation lines, for loggers' sample tables.
    wanted = config.run.wandb_samples if len(loggers) > 1 else 0  # only JsonlLogger: no table to fill
    sample_images = [val_set[i].image for i in range(min(len(val_set), wanted))]
    start_time = time.monotonic() - state.elapsed
    stop_reason = ""
    last_val = None
    loss_value = float("nan")
    try:
        while state.epoch < config.optim.max_epochs and not stop_reason:
            sampler.set_epoch(state.epoch, skip=state.batch_in_epoch * bs)
            model.train()
            bar = tqdm(train_loader, total=steps_per_epoch, initial=state.batch_in_epoch, desc=f"epoch {state.epoch + 1}",
                       disable=not config.run.progress, leave=False, dynamic_ncols=True)
            for batch in bar:
                step_start = time.monotonic()
                batch = batch.to(device)
                guard.before_step(model, _rng_state(device))
                loss, info = compute_loss(model, batch, config.run.loss, ctc_impl, interctc)
                optimizer.zero_grad(set_to_none=True)
                grad_norm = None
                if torch.isfinite(loss):  # a non-finite loss is not back-propagated; the guard skips the step
                    loss.backward()
                    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip or float("inf"))
                problem = guard.check(model, loss, grad_norm)  # None, or why the step must be skipped
                if problem is None:
                    guard.good_step()
                    optimizer.step()
                    scheduler.step()
                state.step += 1
                state.batch_in_epoch += 1
                if problem is not None:
                    state.bad_steps += 1
                    guard.record(problem, model=model, optimizer=optimizer, batch=batch, step=state.step, epoch=state.epoch + 1,
                                 batch_in_epoch=state.batch_in_epoch, total_bad=state.bad_steps,
                                 payload=checkpoint_payload(None), checkpoint=run_dir / "last.pt")
                    if guard.should_stop():
                        save_last()
                        raise TrainingError(guard.stop_message(state.step, run_dir / "last.pt"))
                else:
                    state.lines_seen += info["used"]
                    state.skipped_infeasible += info["infeasible"]
                    seconds = time.monotonic() - step_start
                    state.train_seconds += seconds
                    state.elapsed = time.monotonic() - start_time
                    loss_value = float(loss.detach())
                    metrics = {"epoch": state.epoch + 1, "loss": loss_value, "lr": scheduler.get_last_lr()[0],
                               "grad_norm": float(grad_norm), "lines_per_sec": len(batch.texts) / max(seconds, 1e-9),
                               "elapsed_minutes": state.elapsed / 60}
                    if "interctc" in info:
                        metrics["final_loss"] = info["final_loss"]
                        metrics.update({f"{interctc_names[k]}_loss": v for k, v in info["interctc"].items()})
                    bar.set_postfix(loss=f"{loss_value:.3f}")
                    for logger in loggers:
                        logger.log_train(state.step, metrics)
                if config.run.checkpoint_every and state.step % config.run.checkpoint_every == 0:
                    save_last()
                if config.optim.max_steps and state.step >= config.optim.max_steps:
                    stop_reason = f"reached --max-steps {config.optim.max_steps}"
                    break
                if config.optim.max_minutes and state.elapsed >= config.optim.max_minutes * 60:
                    stop_reason = f"reached --max-minutes {config.optim.max_minutes}"
                    break
            bar.close()
            epoch_done = not stop_reason or state.batch_in_epoch >= steps_per_epoch
            if epoch_done:
                state.epoch += 1
                state.batch_in_epoch = 0
            if not (stop_reason or state.epoch >= config.optim.max_epochs or state.epoch % config.run.val_every == 0):
                save_last()
                continue
            last_val = evaluate(model, val_loader, codec, device, config.run.loss, ctc_impl, interctc).in_dataset_order(val_order)
            state.elapsed = time.monotonic() - start_time
            improved = last_val.cer < state.best_cer
            if improved:
                state.best_cer, state.best_epoch = last_val.cer, state.epoch
            state.epochs_without_improvement = state.epoch - state.best_epoch  # in epochs, whatever --val-every is
            samples = [{"reference": r, "prediction": p, "cer": line_cer(r, p), **({"image": sample_images[i]} if i < len(sample_images) else {})}
                       for i, (r, p) in enumerate(list(zip(last_val.references, last_val.predictions))[:max(16, len(sample_images))])]
            for logger in loggers:
                logger.log_val(state.epoch, state.step, {**last_val.metrics(), "best_val_cer": state.best_cer,
                                                         "elapsed_minutes": state.elapsed / 60}, samples)
            print(f"epoch {state.epoch:3d} step {state.step:6d} | train loss {loss_value:.3f} | val loss {last_val.loss:.3f} "
                  f"cer {last_val.cer:.4f} wer {last_val.wer:.4f} | best {state.best_cer:.4f} | {state.elapsed / 60:.1f} min")
            _watch_blank_collapse(config, state, last_val, model, val_set, loggers)
            save_last(last_val.cer)
            if improved:
                best = checkpoint_payload(last_val.cer)
                save_checkpoint(best, run_dir / "best.pt")
                for logger in loggers:
                    logger.log_checkpoint(run_dir / "best.pt", True, last_val.metrics())
            if config.run.early_stopping and state.epochs_without_improvement >= config.run.early_stopping:
                stop_reason = f"early stopping: no val CER improvement for {config.run.early_stopping} epochs"
    except KeyboardInterrupt:
        save_last()
        stop_reason = "interrupted"
        print(f"interrupted at step {state.step}; resume with --resume --run-dir {run_dir}")
    summary = {
        "run_dir": str(run_dir), "best_checkpoint": str(run_dir / "best.pt"), "last_checkpoint": str(run_dir / "last.pt"),
        "best_val_cer": state.best_cer if state.best_epoch >= 0 else None, "best_epoch": state.best_epoch,
        "final_val_cer": last_val.cer if last_val else None, "final_val_wer": last_val.wer if last_val else None,
        "epochs": state.epoch, "steps": state.step, "elapsed_minutes": round(state.elapsed / 60, 3),
        "train_lines_per_sec": round(state.lines_seen / max(state.train_seconds, 1e-9), 2),
        "skipped_infeasible_in_batches": state.skipped_infeasible,
        "bad_steps": state.bad_steps,
        "data_checks": {k: v.to_dict() for k, v in datasets.reports.items()},
        "stop_reason": stop_reason or f"reached --max-epochs {config.optim.max_epochs}",
        "parameters": num_params, "device": str(device),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    for logger in loggers:
        logger.finish(summary)
    return summary
