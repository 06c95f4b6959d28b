"""A run's checkpoints: what ``last.pt`` and ``best.pt`` hold, how ``--resume`` restores a run from
``last.pt``, and how ``--init-from`` starts a new run from another run's weights.

``last.pt`` (written at epoch ends, every ``--checkpoint-every`` steps, on Ctrl-C and before a stop
for bad steps) holds the raw weights and the train state: optimiser, schedule, counters, RNG state,
loss scaler and weight average. Data order is a pure function of (seed, epoch), so a run resumed
from ``last.pt`` continues with exactly the batches, random state and optimiser state it would have
had; the time budget, the schedule and the best-model tracking live in its counters. ``best.pt``
holds the validated weights (the average with ``--ema-decay``) and no train state.

Each ``--resume`` appends one line to ``config_overrides.jsonl`` in the run directory: when, at which
step, and which allowed flags it changed, as
``{"--max-minutes": {"field": "optim.max_minutes", "saved": 60, "given": 120}}``.

Under ``torchrun`` every rank holds the same weights, so rank 0 alone writes.
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import torch

from text_recognizer.checkpoint import (
    OUTPUT_KIND_OF_LOSS,
    Checkpoint,
    Decoding,
    Provenance,
    load_checkpoint,
    save_checkpoint,
)
from text_recognizer.codec import Codec
from text_recognizer.models.growth import growth, new_block_names, zero_residual_branch
from training.loop import distributed
from training.loop.alphabet import describe_new_rows, remap_output_rows
from training.loop.config import RESUME_OVERRIDE_FLAGS, ExperimentConfig, resume_changes
from training.loop.run_files import OVERRIDES_FILE
from training.loop.run_state import Run, TrainingError


def rng_state(device: torch.device) -> dict:
    """Every random generator a step draws from (dropout, augmentation), as plain types ``weights_only`` loads."""
    state = {
        "torch": torch.get_rng_state(),
        "python": list(random.getstate()[1]),
        "python_version": random.getstate()[0],
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate((state["python_version"], tuple(state["python"]), None))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def git_revision() -> str:
    """The code's git revision (with ``+dirty`` for uncommitted changes), or "" outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
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


def check_resume(run_dir: Path, config: ExperimentConfig, codec: Codec | None) -> tuple[Checkpoint, dict]:
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


def restore(run: Run, bundle: Checkpoint, overrides: dict) -> None:
    """Weights, optimiser, schedule, counters and RNG from ``last.pt``; append this resume to the override history."""
    train_state = bundle.train_state
    run.model.load_state_dict(bundle.model_state)
    run.optimizer.load_state_dict(train_state["optimizer_state"])
    run.scheduler.load_state_dict(train_state["scheduler_state"])
    if run.scaler is not None and train_state.get("scaler_state"):
        run.scaler.load_state_dict(train_state["scaler_state"])
    vars(run.state).update(train_state["counters"])  # in place: the schedule's time budget reads this object
    set_rng_state(train_state["rng"], run.device)
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


def init_from(model: torch.nn.Module, config: ExperimentConfig, path: Path, codec: Codec | None = None) -> None:
    """Start from another checkpoint's weights (fine-tuning); the architectures must match, the alphabets
    may differ (the shared characters keep their output weights: training/loop/alphabet.py), and the encoder may
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
    starts = describe_new_rows("".join(new), theirs.codec)
    print(f"initialised the model from {path}" + (f"; new characters: {starts}" if new else "")
          + (f"; new blocks start as the identity: {', '.join(added)}" if added else ""))


def load_teacher(path: Path, model: torch.nn.Module, codec: Codec, device: torch.device) -> torch.nn.Module:
    """The ``--distill-from`` checkpoint's model, frozen in eval mode on ``device``. Its frame posteriors are
    compared with the model's frame by frame, so it must give the same frames for every width and read the
    same alphabet in the same order; anything else is refused with the reason."""
    theirs = load_checkpoint(path, map_location="cpu")
    own, their_charset = codec.charset, theirs.codec.charset
    if not own.startswith(their_charset):
        raise TrainingError(f"--distill-from {path}: its alphabet differs from this run's "
                            f"({len(their_charset)} against {len(own)} characters; only an alphabet extended "
                            "at its end, as --finetune extends it, can learn from it)")
    teacher = theirs.build_model().to(device).eval()
    widths = torch.tensor([16, 64, 257, 1000, 3001])
    if not torch.equal(teacher.output_lengths(widths).cpu(), model.output_lengths(widths).cpu()):
        raise TrainingError(f"--distill-from {path}: its windows give other frame counts than this run's model")
    for parameter in teacher.parameters():
        parameter.requires_grad_(False)
    extra = len(own) - len(their_charset)
    if extra:
        teacher = ExtendedTeacher(teacher, extra).eval()
    print(f"distilling from {path} (weight in the loss: see --distill-weight)"
          + (f"; {extra} new characters it never reads" if extra else ""))
    return teacher


class ExtendedTeacher(torch.nn.Module):
    """A teacher whose alphabet the run extended (``--finetune`` appends the labels' new characters): its scores
    for the new characters are a large negative constant, so it gives them no probability and the distillation
    term asks nothing of them (a finite constant, not -inf, keeps 0 x log 0 from becoming nan)."""

    def __init__(self, teacher: torch.nn.Module, extra: int) -> None:
        super().__init__()
        self.teacher = teacher
        self.extra = extra

    def forward(self, images: torch.Tensor, widths: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.teacher(images, widths)  # (B, T, C_teacher)
        pad = logits.new_full((*logits.shape[:-1], self.extra), -1e4)  # (B, T, extra)
        return torch.cat([logits, pad], dim=-1)  # (B, T, C_teacher + extra)

    def output_lengths(self, widths: torch.Tensor) -> torch.Tensor:
        return self.teacher.output_lengths(widths)


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
            "rng": rng_state(run.device),
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


def save_best(run: Run, val_cer: float, metrics: dict) -> None:
    """``best.pt``: the validated weights that scored ``val_cer``; the loggers hear of it with ``metrics``."""
    if distributed.is_main():
        save_checkpoint(run_checkpoint(run, val_cer, shipped=True), run.run_dir / "best.pt")
        for logger in run.loggers:
            logger.log_checkpoint(run.run_dir / "best.pt", True, metrics)
