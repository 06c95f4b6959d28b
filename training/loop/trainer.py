"""The training loop as plain functions over one run's state, in the style of torchvision's references.

    fit(config)                       set_up_run, then train_one_epoch + validate_and_checkpoint
                                      until a budget or early stopping says stop, then finish_run
    train_one_epoch(run)              the rest of the current epoch, one train_one_step per batch
    validate_and_checkpoint(run)      validate, then last.pt and, when the CER improved, best.pt
    finish_run(run, stop_reason)      summary.json

The parts live beside it, one job each:

    training/loop/run_state.py      Run, TrainState, Loaders, TrainingError: what the functions pass around
    training/loop/run_setup.py      set_up_run: run directory, data, model, optimiser, schedule, config.json
    training/loop/step.py           train_one_step: autocast, backward, clipping, the non-finite guard
    training/loop/evaluation.py     evaluate, merge_shards, validate: metrics, sample lines, blank collapse
    training/loop/checkpointing.py  last.pt / best.pt, --resume (restore, saved_config), --init-from

The run directory holds ``config.json`` (the configuration the run started with; never rewritten),
``config_overrides.jsonl`` (one line per ``--resume``), ``metrics.jsonl``, ``last.pt`` (epoch ends,
every ``--checkpoint-every`` steps, Ctrl-C), ``best.pt`` and ``summary.json``. A run resumed from
``last.pt`` continues exactly as it would have gone on (``training/loop/checkpointing.py``).

Under ``torchrun`` (``training/loop/distributed.py``) every process runs these same functions on its shard of
each epoch's batches with the model in DistributedDataParallel (``Run.train_model``); ``Run.model`` stays
the bare model (what checkpoints hold). Rank 0 alone writes files and logs; the bad-step decision, the
time budget (rank 0's clock) and the validation figures (summed over all shards) are shared, so the
processes stay in lockstep and stop together.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time

from tqdm import tqdm

from text_recognizer.codec import Codec
from training.loop import distributed
from training.loop.checkpointing import save_best, save_last
from training.loop.config import ExperimentConfig
from training.loop.evaluation import EvalResult, validate
from training.loop.loggers import Logger
from training.loop.run_setup import set_up_run
from training.loop.run_state import Run, TrainState
from training.loop.step import train_one_step


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


def _follow_free_cores(run: Run) -> None:
    """``--threads auto``: fewer torch threads while other processes take CPU, more when they stop."""
    if run.threads is None:
        return
    changed = run.threads.update()
    if changed is not None:
        tqdm.write(f"note: other processes used {run.threads.others_cores:.1f} of {run.threads.cores} cores; "
                   f"torch threads -> {changed} (--threads auto)")


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
    """Validate, save ``last.pt`` and, when the CER improved, ``best.pt``."""
    result, improved = validate(run)
    save_last(run, result.cer if run.average is None else None)  # the CER scored the average, not last.pt's weights
    if improved:
        save_best(run, result.cer, result.metrics())
    return result


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
