"""The validation pass of a run: loss, corpus CER/WER and predictions over the validation set, the
logged metrics and sample lines, the best-model bookkeeping, and the blank-collapse warning.

Under ``torchrun`` each rank scores its shard of the validation set; ``merge_shards`` combines the
shards into exactly the figures of the whole set (edits and characters are summed over all lines,
not averaged over shards), so every rank takes the same best-model and early-stopping decisions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from text_recognizer.codec import Codec
from text_recognizer.ctc import ctc_loss
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.decoding.greedy import ctc_decode
from text_recognizer.metrics import cer, line_cer, wer
from training.loop import distributed
from training.loop.guard import COLLAPSE_SHARE, blank_share, collapse_advice
from training.loop.objective import forward, needed_frames, nll_loss
from training.loop.run_state import Run

COLLAPSE_PROBE_LINES = 32  # validation lines whose frames per needed frame the blank-collapse warning reports


def folder_parts(dataset) -> list[tuple[str, int]]:
    """``(name, lines)`` of each validation folder, in dataset order; empty for a set that is one part.

    Why: a run validated on several sources (IAM, Copiste, each collection of ``data/``) must say how each one
    reads, not only their pooled CER: a pooled number hides the source that got worse. The name is the folder's
    last two path parts (``timeus/val``), so runs compare source by source in ``metrics.jsonl`` and W&B.
    """
    inner = getattr(dataset, "lines", dataset)
    parts = getattr(inner, "datasets", None)
    if not parts or len(parts) < 2:
        return []
    named = []
    for part in parts:
        folder = getattr(part, "folder", None)
        if folder is None:
            return []
        named.append(("/".join(folder.parts[-2:]), len(part)))
    return named


def part_cers(parts: list[tuple[str, int]], references: list[str], predictions: list[str]) -> dict[str, float]:
    """``val_cer_<name>``: the corpus CER of each part, for references and predictions in dataset order."""
    metrics, start = {}, 0
    for name, count in parts:
        key = "val_cer_" + "".join(c if c.isalnum() else "_" for c in name)
        metrics[key] = cer(references[start:start + count], predictions[start:start + count])
        start += count
    return metrics


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


def _scored(
    loss_sum: float, refs: list[str], preds: list[str], layer_loss_sums: dict[str, float], layer_preds: dict[str, list]
) -> EvalResult:
    """The result of lines whose losses were summed (weighted by lines): mean losses and corpus CER/WER,
    the same whether the lines came from one loader or from several shards."""
    n = len(refs)
    extra = {}
    for name, layer_loss in layer_loss_sums.items():
        extra[f"val_{name}_loss"] = layer_loss / max(n, 1)
        extra[f"val_{name}_cer"] = cer(refs, layer_preds[name])
    return EvalResult(
        loss=loss_sum / max(n, 1),
        cer=cer(refs, preds),
        wer=wer(refs, preds),
        n=n,
        references=refs,
        predictions=preds,
        extra=extra,
        layer_predictions=layer_preds,
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
    total_loss, refs, preds = 0.0, [], []
    names = interctc.metric_names(model) if interctc is not None else {}
    layer_loss = dict.fromkeys(names, 0.0)
    layer_preds: dict[int, list[str]] = {layer: [] for layer in names}
    for batch in loader:
        batch = batch.to(device)
        logits, captured = forward(model, batch, interctc)  # (B, T, C)
        frames = model.output_lengths(batch.widths)  # (B,) frames per line
        targets, lengths = batch.targets, batch.target_lengths.to(device)
        for layer, layer_logits in interctc.layer_logits(model, captured).items() if interctc is not None else ():
            value = ctc_loss(  # layer_logits: (B, T, C) through the output head
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
        preds.extend(line.text for line in ctc_decode(logits, codec, frames, collapse_repeats=loss_kind == "ctc"))
        refs.extend(batch.texts)
    model.train(was_training)
    return _scored(
        total_loss,
        refs,
        preds,
        {name: layer_loss[layer] for layer, name in names.items()},
        {name: layer_preds[layer] for layer, name in names.items()},
    )


def merge_shards(parts: list[EvalResult]) -> EvalResult:
    """One result from the results of disjoint shards (in visiting order): the same corpus CER/WER and
    mean loss as evaluating the whole set at once (edits and characters are summed over all lines)."""
    names = parts[0].layer_predictions
    return _scored(
        sum(p.loss * p.n for p in parts),
        [r for p in parts for r in p.references],
        [r for p in parts for r in p.predictions],
        {name: sum(p.extra[f"val_{name}_loss"] * p.n for p in parts) for name in names},
        {name: [x for p in parts for x in p.layer_predictions[name]] for name in names},
    )


def validate(run: Run) -> tuple[EvalResult, bool]:
    """Score the validated weights on the whole validation set, update the best-model counters, log the
    metrics and sample lines, and warn of a blank collapse; the result, and whether the CER improved."""
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
    result.extra.update(part_cers(folder_parts(run.data.val_set), result.references, result.predictions))
    state.elapsed = run.synced_elapsed()
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
    by_source = {k.removeprefix("val_cer_"): v for k, v in result.extra.items() if k.startswith("val_cer_")}
    if by_source:
        print("  cer by source: " + ", ".join(f"{name} {value:.4f}" for name, value in by_source.items()))
    _watch_blank_collapse(run, result)
    return result, improved


def _watch_blank_collapse(run: Run, result: EvalResult) -> None:
    """Count validations whose predictions are (almost) all blank; warn every ``--blank-collapse-epochs`` in a row."""
    config, state = run.config, run.state
    share = blank_share(result.references, result.predictions)
    state.blank_epochs = state.blank_epochs + 1 if share >= COLLAPSE_SHARE else 0
    every = config.run.blank_collapse_epochs
    if not every or config.run.loss != "ctc" or not state.blank_epochs or state.blank_epochs % every:
        return
    samples = [run.data.val_set[i] for i in range(min(COLLAPSE_PROBE_LINES, len(run.data.val_set)))]
    frames = run.model.output_lengths(torch.tensor([s.image.shape[-1] for s in samples], dtype=torch.int64))  # (N,)
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
