"""Investigate a training step the non-finite guard skipped (``<run_dir>/bad_steps/step_<N>.pt``).

    python -m training.loop.debug replay DUMP [--checkpoint CKPT] [--trace]
        Recompute the step: loss, total and largest gradient norms, non-finite gradients. With
        --trace, forward hooks name the first module whose output is non-finite (and whether its
        input already was), then the first parameter whose gradient is (in backward order).
        The model is the one inside the dump (as the step saw it) unless --checkpoint is given.

    python -m training.loop.debug crosscheck DUMP [--checkpoint CKPT]
        Run the batch's logits through every available CTC implementation (PyTorch float32,
        the fused Triton kernel on CUDA or with TRITON_INTERPRET=1, and a float64 reference) and
        print the largest differences in loss and gradient: a loss bug shows as disagreement, a
        modelling problem as non-finite logits or agreement on a bad value.

Both print a plain report and exit 0 (1 when the dump or checkpoint cannot be read).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from text_recognizer.checkpoint import Checkpoint, CheckpointError, load_checkpoint
from text_recognizer.ctc import ctc_loss
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.data.lines import LineBatch
from training.loop.checkpointing import load_teacher
from training.loop.config import ExperimentConfig
from training.loop.guard import DUMP_KIND
from training.loop.objective import compute_loss, feasible_rows


@dataclass
class Replay:
    """What ``replay`` found. ``first_nonfinite_module`` is ``""`` when every output was finite."""

    loss: float
    dump_loss: float
    reproduced: bool
    grad_norm: float | None
    largest_grads: list[tuple[str, float]] = field(default_factory=list)
    nonfinite_grads: list[str] = field(default_factory=list)
    input_nonfinite: bool = False
    first_nonfinite_module: str = ""
    first_module_input_finite: bool = True
    first_nonfinite_grad: str = ""

    @property
    def step_is_bad(self) -> bool:
        """Whether the guard would skip this step (non-finite loss or gradient)."""
        return not math.isfinite(self.loss) or bool(self.nonfinite_grads) or not math.isfinite(self.grad_norm or 0.0)

    def report(self, trace: bool) -> str:
        lines = [
            f"loss: {self.loss} (dump recorded {self.dump_loss}) -> "
            f"{'reproduced' if self.reproduced else 'NOT reproduced'}; "
            f"the guard would {'skip' if self.step_is_bad else 'accept'} this step"
        ]
        if self.grad_norm is None:
            lines.append("gradients: not computed (the loss is non-finite; the training step skipped backward too)")
        else:
            lines.append(f"gradient norm (total, before clipping): {self.grad_norm}")
            lines += [f"  {norm:12.4g}  {name}" for name, norm in self.largest_grads]
            lines.append(
                f"non-finite gradients: {len(self.nonfinite_grads)}"
                + (f" ({', '.join(self.nonfinite_grads[:5])})" if self.nonfinite_grads else "")
            )
        if trace:
            if self.input_nonfinite:
                lines.append("trace: the batch images themselves are non-finite (a data problem)")
            if self.first_nonfinite_module:
                origin = (
                    "its input was finite: this module produced it"
                    if self.first_module_input_finite
                    else "its input was already non-finite"
                )
                lines.append(
                    f"trace: first module with a non-finite forward output: {self.first_nonfinite_module} ({origin})"
                )
            else:
                lines.append("trace: every module's forward output is finite (look at the loss: try crosscheck)")
            if self.first_nonfinite_grad:
                lines.append(
                    f"trace: first parameter with a non-finite gradient (backward order): {self.first_nonfinite_grad} "
                    "(the module just after it in the forward pass sent it back)"
                )
        return "\n".join(lines)


def load_dump(path: str | Path) -> Checkpoint:
    """A bad-step dump: the run's checkpoint bundle, with the step's facts in ``extra``."""
    dump = load_checkpoint(path)
    if dump.extra.get("kind") != DUMP_KIND:
        raise CheckpointError(f"{path} is a checkpoint but not a bad-step dump (no kind={DUMP_KIND!r})")
    return dump


def _batch(dump: Checkpoint, device: torch.device) -> LineBatch:
    b = dump.extra["batch"]
    return LineBatch(b["images"], b["widths"], b["targets"], b["target_lengths"], list(b["texts"])).to(device)


def _model(dump: Checkpoint, checkpoint: str | None, device: torch.device) -> torch.nn.Module:
    source = load_checkpoint(checkpoint) if checkpoint else dump
    return source.build_model().to(device).train()  # the step ran in training mode (dropout, batch statistics)


def _restore_rng(dump: Checkpoint, device: torch.device) -> None:
    rng = dump.extra.get("rng") or {}
    if "torch" in rng:
        torch.set_rng_state(rng["torch"])
    if device.type == "cuda" and "cuda" in rng:
        torch.cuda.set_rng_state(rng["cuda"], device)


def _tensors(value):
    """Floating-point tensors inside a module's input or output (tuples, PackedSequence, dicts)."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _finite(value) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in _tensors(value))


def _compute_loss(model, batch: LineBatch, dump: Checkpoint):
    """The step's loss exactly as ``fit`` computes it (``training.loop.objective.compute_loss``)."""
    config = ExperimentConfig.from_dict(dump.provenance.recipe)
    interctc = InterCTC.from_settings(config.interctc.layers, config.interctc.weights)  # None when off
    teacher = None
    if config.run.distill_from:
        teacher = load_teacher(Path(config.run.distill_from), model, dump.codec, batch.images.device)
    return compute_loss(model, batch, config.run.loss, config.run.ctc_impl, interctc, config.run.label_smoothing,
                        config.run.ctc_reduction, teacher, config.run.distill_weight)


def replay(
    dump_path: str | Path, checkpoint: str | None = None, trace: bool = False, device: str = "cpu", top: int = 5
) -> Replay:
    """Recompute a dumped step; with ``trace`` locate the first non-finite module output and gradient."""
    dump = load_dump(dump_path)
    dev = torch.device(device)
    model = _model(dump, checkpoint, dev)
    batch = _batch(dump, dev)
    first_module, first_input_finite = "", True
    handles = []
    if trace:
        names = {module: name or type(module).__name__ for name, module in model.named_modules()}

        def hook(module, inputs, output):
            nonlocal first_module, first_input_finite
            if not first_module and not _finite(output):
                first_module, first_input_finite = names[module], _finite(inputs)

        handles = [m.register_forward_hook(hook) for m in model.modules()]
    _restore_rng(dump, dev)
    try:
        loss, _ = _compute_loss(model, batch, dump)
    finally:
        for handle in handles:
            handle.remove()
    loss_value = float(loss.detach())
    dump_loss = float(dump.extra["loss_value"])
    grad_norm, largest, bad, first_grad = None, [], [], ""
    if math.isfinite(loss_value):
        order: list[str] = []
        grad_handles = []
        if trace:
            for name, p in model.named_parameters():
                grad_handles.append(
                    p.register_hook(
                        lambda g, name=name: (order.append(name) if not bool(torch.isfinite(g).all()) else None)
                    )
                )
        loss.backward()
        for handle in grad_handles:
            handle.remove()
        norms = {name: float(p.grad.norm()) for name, p in model.named_parameters() if p.grad is not None}
        grad_norm = math.sqrt(sum(v * v for v in norms.values())) if norms else 0.0
        largest = sorted(norms.items(), key=lambda kv: -kv[1] if math.isfinite(kv[1]) else -math.inf)[:top]
        bad = [
            name
            for name, p in model.named_parameters()
            if p.grad is not None and not bool(torch.isfinite(p.grad).all())
        ]
        first_grad = order[0] if order else ""
    if dump.extra["loss_finite"]:  # the step had a finite loss but a non-finite gradient
        reproduced = math.isfinite(loss_value) and (bool(bad) or not math.isfinite(grad_norm))
    else:
        reproduced = not math.isfinite(loss_value)
    return Replay(
        loss_value,
        dump_loss,
        reproduced,
        grad_norm,
        largest,
        bad,
        input_nonfinite=not _finite(batch.images),
        first_nonfinite_module=first_module,
        first_module_input_finite=first_input_finite,
        first_nonfinite_grad=first_grad,
    )


# -- crosscheck -------------------------------------------------------------------------------------


@dataclass
class Crosscheck:
    logits_finite: bool
    used: int
    # impl -> loss (sum over samples), max_loss_diff (per sample, relative to the float64 loss),
    # max_grad_diff (absolute, d loss / d logits), worst_sample (its text), or error
    results: dict[str, dict] = field(default_factory=dict)

    def report(self) -> str:
        lines = [
            f"logits: {'finite' if self.logits_finite else 'NON-FINITE (a modelling problem: run replay --trace)'}; "
            f"{self.used} feasible sample(s) scored"
        ]
        lines.append(f"{'implementation':<22} {'loss (sum)':>14} {'rel. dloss':>12} {'max |dgrad|':>12}  worst sample")
        for name, r in self.results.items():
            if "error" in r:
                lines.append(f"{name:<22} unavailable: {r['error']}")
                continue
            lines.append(
                f"{name:<22} {r['loss']:>14.6g} {r['max_loss_diff']:>12.3g} {r['max_grad_diff']:>12.3g}  "
                f"{r['worst_sample']}"
            )
        verdict = self.verdict()
        lines.append(f"verdict: {verdict}")
        return "\n".join(lines)

    def verdict(self) -> str:
        ok = {k: r for k, r in self.results.items() if "error" not in r and k != "reference_float64"}
        ref = self.results.get("reference_float64", {})
        if not self.logits_finite:
            return "the model's output is already non-finite: not a loss bug"
        if not math.isfinite(ref.get("loss", math.nan)):
            return (
                "the float64 reference is non-finite too: the targets cannot be aligned or the logits are extreme "
                "(modelling/data problem)"
            )
        worst = max((max(r["max_loss_diff"], r["max_grad_diff"]) for r in ok.values()), default=0.0)
        if not math.isfinite(worst) or worst > 1e-2:
            bad = [
                k
                for k, r in ok.items()
                if not math.isfinite(max(r["max_loss_diff"], r["max_grad_diff"]))
                or max(r["max_loss_diff"], r["max_grad_diff"]) > 1e-2
            ]
            return f"{', '.join(bad)} disagree(s) with the float64 reference: suspect a loss bug"
        return "all implementations agree with the float64 reference: the loss is not the problem"


def _available_impls(device: torch.device) -> dict[str, tuple[str, torch.device, torch.dtype]]:
    impls = {"torch_float32": ("torch", torch.device("cpu"), torch.float32)}
    if torch.cuda.is_available():
        impls["torch_float32_cuda"] = ("torch", torch.device("cuda"), torch.float32)
        impls["triton_cuda"] = ("triton", torch.device("cuda"), torch.float32)
    elif os.environ.get("TRITON_INTERPRET") == "1":
        impls["triton_interpreter"] = ("triton", torch.device("cpu"), torch.float32)
    return impls


def crosscheck(dump_path: str | Path, checkpoint: str | None = None, device: str = "cpu") -> Crosscheck:
    """Same logits through every available CTC implementation, compared with a float64 reference."""
    dump = load_dump(dump_path)
    dev = torch.device(device)
    model = _model(dump, checkpoint, dev)
    batch = _batch(dump, dev)
    _restore_rng(dump, dev)
    with torch.no_grad():
        logits = model(batch.images, batch.widths).detach().cpu()  # (B, T, C)
    frames = model.output_lengths(batch.widths).cpu()
    rows = feasible_rows(frames, batch.texts)  # the samples the training step scored
    logits, targets = logits[rows], batch.targets.cpu()[rows]
    frames, lengths = frames[rows], batch.target_lengths.cpu()[rows]
    result = Crosscheck(bool(torch.isfinite(logits).all()), len(rows))

    def run(impl: str, where: torch.device, dtype: torch.dtype):
        x = logits.to(where, dtype).detach().clone().requires_grad_(True)  # a fresh leaf: no shared .grad
        per_sample = ctc_loss(x, targets.to(where), frames.to(where), lengths.to(where), reduction="none", impl=impl)
        per_sample.sum().backward()
        return per_sample.detach().double().cpu(), x.grad.detach().double().cpu()

    ref_loss, ref_grad = run("torch", torch.device("cpu"), torch.float64)
    result.results["reference_float64"] = {
        "loss": float(ref_loss.sum()),
        "max_loss_diff": 0.0,
        "max_grad_diff": 0.0,
        "worst_sample": "-",
    }
    for name, (impl, where, dtype) in _available_impls(dev).items():
        try:
            loss, grad = run(impl, where, dtype)
        except Exception as error:  # noqa: BLE001 - report and go on to the next implementation
            result.results[name] = {"error": f"{type(error).__name__}: {error}"}
            continue
        loss_diff = _diff(loss, ref_loss) / ref_loss.abs().clamp_min(1.0)  # relative: losses grow with line length
        grad_diff = _diff(grad, ref_grad).flatten(1).amax(1) if len(rows) else torch.zeros(0)
        per_sample = torch.maximum(loss_diff, grad_diff) if len(rows) else torch.zeros(0)
        worst = int(per_sample.argmax()) if len(rows) else -1
        result.results[name] = {
            "loss": float(loss.sum()),
            "max_loss_diff": float(loss_diff.max()) if len(rows) else 0.0,
            "max_grad_diff": float(grad_diff.max()) if len(rows) else 0.0,
            "worst_sample": f"{batch.texts[int(rows[worst])]!r}" if worst >= 0 else "-",
        }
    return result


def _diff(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b|, with matching infinities counted as equal and any other non-finite value as inf."""
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    diff = (a - b).abs()
    return torch.where(
        same, torch.zeros_like(diff), torch.where(torch.isfinite(diff), diff, torch.full_like(diff, math.inf))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.loop.debug",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("replay", "recompute a dumped step (loss, gradient norms; --trace: where it goes non-finite)"),
        ("crosscheck", "compare every available CTC implementation on the dumped batch"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("dump", help="a bad-step dump: <run_dir>/bad_steps/step_<N>.pt")
        command.add_argument(
            "--checkpoint", default=None, help="take the model weights from this checkpoint instead of the dump"
        )
        command.add_argument(
            "--device",
            default="cpu",
            help="device to run on (cpu, cuda); the dump records the one training used as 'device'",
        )
        if name == "replay":
            command.add_argument(
                "--trace",
                action="store_true",
                help="name the first module whose forward output is non-finite and the first parameter whose "
                "gradient is",
            )
    args = parser.parse_args(argv)
    try:
        dump = load_dump(args.dump)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    facts = dump.extra
    print(
        f"{args.dump}: step {facts['step']} (epoch {facts['epoch']}), {len(facts['batch']['texts'])} lines; "
        f"trained on {facts.get('device', '?')}; recorded: {facts['reason']}; "
        f"last checkpoint: {facts.get('checkpoint')}"
    )
    try:
        if args.command == "replay":
            print(replay(args.dump, args.checkpoint, args.trace, args.device).report(args.trace))
        else:
            print(crosscheck(args.dump, args.checkpoint, args.device).report())
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
