"""Average the weights of several checkpoints of one model into a new checkpoint (checkpoint averaging).

    python -m training.release.average_checkpoints runs/a/snap_1.pt runs/a/snap_2.pt runs/a/last.pt --out averaged.pt

Why: late in a run, with a small learning rate, successive checkpoints sit around the same minimum
with each step's noise on top; their mean often reads better than any one of them (the idea behind
stochastic weight averaging). This is the after-the-fact form of ``--ema-decay``: it needs no
training-time setting and can be tried on snapshots of a run that is already over. Whether it helps
is measured, not assumed: evaluate the result with ``training/evaluate.py`` beside its inputs.

Floating-point tensors (weights and batch-norm running statistics) are averaged, equally weighted;
integer buffers (batches tracked) come from the last checkpoint. Every input must hold the same
model config, codec and parameter names and shapes; anything else is refused with the reason. The
result has no training state (it is a model, not a resume point) and keeps the last input's
decoding, licence and provenance, with ``step`` cleared because no single step produced it.

``--ema`` takes, from every input that holds one, the exponential moving average of a run with
``--ema-decay`` instead of its raw weights: a ``last.pt`` keeps the raw weights (training continues
from them) and the average in its training state; a run's final average can read as well as its
``best.pt`` and adds to a mean (benchmarks/RESULTS.md, ``…12.03b``). One input averages to that
copy alone (the run's final average as a model). An input without an average is refused with
``--ema``, so a mix-up cannot pass silently.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

from text_recognizer.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint

__all__ = ["average_checkpoints", "average_states", "ema_weights"]


def average_states(states: list[dict]) -> dict:
    """The element-wise mean of ``states`` (same names and shapes); integer tensors from the last one."""
    if not states:
        raise ValueError("average_states needs at least one state")
    names = list(states[-1])
    for index, state in enumerate(states):
        if set(state) != set(names):
            differing = sorted(set(state) ^ set(names))
            raise CheckpointError(f"input {index + 1} has different parameters than the last input: {differing[:5]}")
        for name in names:
            if state[name].shape != states[-1][name].shape:
                raise CheckpointError(
                    f"input {index + 1}: {name} has shape {tuple(state[name].shape)}, "
                    f"the last input {tuple(states[-1][name].shape)}"
                )
    averaged = {}
    for name in names:
        last = states[-1][name]
        if last.is_floating_point():
            total = torch.stack([state[name].double() for state in states]).mean(dim=0)
            averaged[name] = total.to(last.dtype)
        else:
            averaged[name] = last.clone()
    return averaged


def ema_weights(bundle: Checkpoint) -> Checkpoint:
    """``bundle`` with its weight average (``--ema-decay``, kept in a ``last.pt``) as the model's weights."""
    average = (bundle.train_state or {}).get("ema_state")
    if average is None:
        raise CheckpointError(
            f"{bundle.source or 'a checkpoint'} holds no weight average (only a last.pt of a run with "
            "--ema-decay does; best.pt already holds the average's weights): leave out --ema or this input"
        )
    return bundle.replace(model_state=average["model_state"])


def average_checkpoints(bundles: list[Checkpoint]) -> Checkpoint:
    """One checkpoint whose weights are the mean of ``bundles``' weights (see the module docstring)."""
    if not bundles:
        raise ValueError("average_checkpoints needs at least one checkpoint")
    last = bundles[-1]
    for bundle in bundles[:-1]:
        if bundle.model_config != last.model_config:
            raise CheckpointError(
                f"{bundle.source or 'a checkpoint'} has model config {bundle.model_config}, "
                f"{last.source or 'the last one'} {last.model_config}: only one model's checkpoints can be averaged"
            )
        if bundle.codec != last.codec:
            raise CheckpointError(
                f"{bundle.source or 'a checkpoint'} and {last.source or 'the last one'} have different alphabets"
            )
    state = average_states([bundle.model_state for bundle in bundles])
    provenance = dataclasses.replace(last.provenance, step=None, val_cer=None, val_data="")
    return last.replace(model_state=state, train_state=None, extra={}, provenance=provenance)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="average_checkpoints.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoints", type=Path, nargs="+", help="checkpoints of one model (best.pt, last.pt, ...)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the averaged checkpoint")
    parser.add_argument(
        "--ema",
        action="store_true",
        help="average the inputs' --ema-decay weight averages instead of their raw weights "
        "(inputs: last.pt files of runs with --ema-decay)",
    )
    args = parser.parse_args(argv)
    try:
        bundles = [load_checkpoint(path) for path in args.checkpoints]
        if args.ema:
            bundles = [ema_weights(bundle) for bundle in bundles]
        averaged = average_checkpoints(bundles)
    except (CheckpointError, ValueError) as error:
        print(f"average_checkpoints.py: {error}", file=sys.stderr)
        return 2
    save_checkpoint(averaged, args.out)
    print(f"averaged {len(bundles)} checkpoints into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
