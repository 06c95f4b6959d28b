"""One training step and the guards around it: autocast, loss scaling, gradient clipping, the
non-finite guard (``training/loop/guard.py``), and the per-step counters and metrics.

A step whose loss or gradient is not finite never updates the model: it is skipped, counted and
dumped, and too many in a row save ``last.pt`` and stop the run. Under ``torchrun`` backward
all-reduces the gradients, so every rank must take the same decision: finiteness, the bad-step
verdict and the loss are summed over the ranks before anyone steps.
"""

from __future__ import annotations

import time

import torch

from training.loop import distributed
from training.loop.checkpointing import rng_state, run_checkpoint, save_last
from training.loop.device import autocast
from training.loop.guard import Problem
from training.loop.objective import compute_loss
from training.loop.run_state import Run, TrainingError


def train_one_step(run: Run, batch) -> float | None:
    """One optimiser step on ``batch``; the loss, or ``None`` when the non-finite guard skipped the step."""
    config, state, model = run.config, run.state, run.model
    step_start = time.monotonic()
    batch = batch.to(run.device)
    run.guard.before_step(model, rng_state(run.device))
    with autocast(config.run.precision, run.device):
        loss, info = compute_loss(  # loss: () a scalar; info: counts and loss terms as plain numbers
            run.train_model or model, batch, config.run.loss, config.run.ctc_impl, run.interctc,
            label_smoothing=config.run.label_smoothing, ctc_reduction=config.run.ctc_reduction,
            teacher=run.teacher, distill_weight=config.run.distill_weight,
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
    state.elapsed = run.synced_elapsed()
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
    if "distill_loss" in info:  # the distillation term, unweighted, and the loss without it
        metrics["ctc_loss"], metrics["distill_loss"] = info["ctc_loss"], info["distill_loss"]
    if "interctc" in info:
        metrics["final_loss"] = info["final_loss"]
        metrics.update({f"{run.interctc_names[layer]}_loss": value for layer, value in info["interctc"].items()})
    for logger in run.loggers:
        logger.log_train(state.step, metrics)
    return run.last_loss


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
