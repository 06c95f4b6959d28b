"""Train the line segmenter (``text_recognizer.segmentation``'s ``LineUNet``) on PAGE/ALTO folders.

    python -m training.segmenter.train --data PAGES [PAGES ...] --val-data VAL_PAGES --run-dir training/logs/seg

Every step is a batch of random crops (``training.segmenter.pages``) of the training pages, and of synthetic
pages composed from line images (``--synthetic-lines FOLDER --synthetic-pages N``); the loss is binary
cross-entropy on both maps plus a Dice term on the cores (thin, and what separates lines). Every
``--eval-every`` steps the whole ``--val-data`` pages are segmented the way users' pages are
(``LearnedSegmenter``) and scored by line detection F1 (one-to-one at polygon IoU >= 0.5, the measure of
``training/evaluate.py --pages``); the best is kept as ``best.pt`` in the format ``--segmenter`` and the
package read.

The run directory holds ``config.json``, ``metrics.jsonl``, ``last.pt`` (everything needed to resume:
``--resume`` continues the same batches from the same step), ``best.pt`` and ``summary.json``. ``--wandb``
logs to Weights & Biases (offline without an API key), as the recognizer's training does.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from text_recognizer.segmentation.learned import WORK_SIDE, LearnedSegmenter, save_segmenter
from text_recognizer.segmentation.scoring import detection_scores
from text_recognizer.segmentation.unet import LineUNet, UNetConfig
from training.loop.loggers import JsonlLogger
from training.segmenter.pages import CropDataset, CropSettings, TrainingPage, load_pages


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = parser.add_argument_group("data")
    data.add_argument("--data", nargs="*", default=[], help="PAGE/ALTO folders (XML files beside their images)")
    data.add_argument("--val-data", nargs="*", default=[], help="PAGE/ALTO folders to score every --eval-every")
    data.add_argument("--synthetic-lines", default=None,
                      help="a labels.tsv folder of line images to compose synthetic pages from (e.g. IAM train)")
    data.add_argument("--synthetic-pages", type=int, default=0, help="how many synthetic pages to compose")
    data.add_argument("--synthetic-share", type=float, default=0.3, help="share of crops from synthetic pages")
    data.add_argument("--synthetic-letterheads", type=float, default=0.0,
                      help="share of synthetic pages printed with a letterhead above the writing (no line of its own)")
    data.add_argument("--bad-samples", choices=("warn", "error"), default="warn",
                      help="what to do about pages and lines the data checks report")
    data.add_argument("--crop", type=int, default=512, help="crop side in working pixels")
    opt = parser.add_argument_group("optimisation")
    opt.add_argument("--steps", type=int, default=3000)
    opt.add_argument("--batch-size", type=int, default=8)
    opt.add_argument("--lr", type=float, default=2e-3, help="AdamW peak learning rate (cosine decay to 5%%)")
    opt.add_argument("--weight-decay", type=float, default=1e-4)
    opt.add_argument("--warmup", type=int, default=100, help="linear warm-up steps")
    opt.add_argument("--core-weight", type=float, default=1.0, help="weight of the core maps' Dice term")
    run = parser.add_argument_group("run")
    run.add_argument("--run-dir", required=True, help="where config, checkpoints and metrics go")
    run.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its last.pt")
    run.add_argument("--init-from", default=None, help="start from these segmenter weights (a best.pt)")
    run.add_argument("--widths", type=int, nargs="+", default=list(UNetConfig().widths), help="U-Net widths")
    run.add_argument("--eval-every", type=int, default=250)
    run.add_argument("--save-every", type=int, default=50, help="write last.pt every this many steps")
    run.add_argument("--max-minutes", type=float, default=0.0, help="stop (resumably) after this long; 0: no limit")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
    run.add_argument("--wandb", action="store_true", help="log to Weights & Biases (offline without an API key)")
    run.add_argument("--wandb-project", default="text-recognizer-segmenter")
    args = parser.parse_args(argv)
    if not args.data and not (args.synthetic_lines and args.synthetic_pages):
        parser.error("give --data PAGE/ALTO folders, or --synthetic-lines with --synthetic-pages N, or both")
    if args.synthetic_pages and not args.synthetic_lines:
        parser.error("--synthetic-pages needs --synthetic-lines FOLDER (line images to compose pages from)")
    if args.crop < 64 or args.crop % 64:
        parser.error(f"--crop must be a positive multiple of 64, got {args.crop}")
    return args


def segmentation_loss(logits: torch.Tensor, targets: torch.Tensor, core_weight: float = 1.0) -> torch.Tensor:
    """BCE on both maps plus ``core_weight`` x (1 - Dice) on the cores; ``(B, 2, h, w)`` each."""
    bce = F.binary_cross_entropy_with_logits(logits, targets)
    core = torch.sigmoid(logits[:, 1])  # (B, h, w)
    overlap = (core * targets[:, 1]).sum((1, 2))  # (B,)
    dice = (2 * overlap + 1) / (core.sum((1, 2)) + targets[:, 1].sum((1, 2)) + 1)  # (B,)
    return bce + core_weight * (1 - dice.mean())


def learning_rate(step: int, args: argparse.Namespace) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def evaluate_segmenter(model: LineUNet, folders: list[str], work_side: int = WORK_SIDE) -> dict:
    """Line detection on whole pages, as ``training/evaluate.py --pages --detection-only`` scores it (the counted
    lines, text blocks, IoU >= 0.5), summed over ``folders``."""
    from training.segmenter.page_evaluation import evaluate_pages

    segmenter = LearnedSegmenter(copy.deepcopy(model).cpu(), work_side)
    totals = {"matched": 0, "found": 0, "true": 0, "seconds": 0.0}
    for folder in folders:
        result = evaluate_pages(folder, None, segmenter)
        for key in ("matched", "found", "true"):
            totals[key] += result[key]
        totals["seconds"] += result["segment_seconds_per_page"] * result["pages"]
    return {**detection_scores(totals["matched"], totals["found"], totals["true"]), **totals}


def synthetic_pages(folder: str, count: int, seed: int, letterheads: float = 0.0) -> list[TrainingPage]:
    """``count`` pages composed from the line images of ``folder`` (``training.segmenter.compose_pages``),
    shrunk for training."""
    from training.segmenter.compose_pages import composed_pages
    from training.segmenter.pages import shrunk

    composed = composed_pages(folder, count, np.random.default_rng((seed, 7)), letterheads)
    return [shrunk(f"synthetic-{index}", page.image.convert("L"),
                   [(list(line.polygon), list(line.baseline)) for line in page.lines])
            for index, page in enumerate(tqdm(composed, total=count, desc="composing synthetic pages", unit="page"))]


def _report(report, policy: str) -> None:
    if not report.problems:
        return
    shown = report.lines_text()
    print(f"data checks: {len(shown)} problem(s) in the page folders:", file=sys.stderr)
    for line in shown[:20]:
        print(f"  {line}", file=sys.stderr)
    if len(shown) > 20:
        print(f"  ... and {len(shown) - 20} more", file=sys.stderr)
    if policy == "error":
        raise SystemExit("stopping: --bad-samples error")


def _open_run_dir(args: argparse.Namespace) -> tuple[Path, dict]:
    """The run folder, refusing to overwrite a run or to resume a missing one; writes ``config.json``."""
    run_dir = Path(args.run_dir)
    last = run_dir / "last.pt"
    if args.resume and not last.is_file():
        raise SystemExit(f"--resume: {last} does not exist")
    if not args.resume and last.is_file():
        raise SystemExit(f"{run_dir} already holds a run (last.pt); give --resume or another --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    config = {key: value for key, value in vars(args).items()}
    (run_dir / "config.json").write_text(json.dumps(config, indent=2))
    return run_dir, config


def _crop_dataset(args: argparse.Namespace) -> tuple[CropDataset, CropSettings]:
    """The crops of every step (real pages checked and reported, plus any synthetic pages), and their settings."""
    pages, report = load_pages(args.data) if args.data else ([], None)
    if report is not None:
        print(f"training pages: {report.pages} pages, {report.lines} lines from {', '.join(args.data)}")
        _report(report, args.bad_samples)
    synthetic = (synthetic_pages(args.synthetic_lines, args.synthetic_pages, args.seed, args.synthetic_letterheads)
                 if args.synthetic_pages else [])
    settings = CropSettings(crop=args.crop)
    dataset = CropDataset(pages, args.steps * args.batch_size, args.seed, settings, synthetic, args.synthetic_share)
    return dataset, settings


@dataclass
class _Run:
    """The state a segmenter run carries from step to step (and writes to ``last.pt`` to resume)."""

    args: argparse.Namespace
    run_dir: Path
    config: dict
    settings: CropSettings
    model: LineUNet
    optimizer: torch.optim.Optimizer
    loggers: list = field(default_factory=list)
    step: int = 0
    best: dict = field(default_factory=lambda: {"f1": -1.0, "step": None})

    def save_last(self) -> None:
        """Everything needed to resume, written via a temporary file so that a crash never leaves half a file."""
        torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step,
                    "best": self.best, "config": self.config}, self.run_dir / "last.pt.tmp")
        (self.run_dir / "last.pt.tmp").replace(self.run_dir / "last.pt")

    def card(self) -> dict:
        """What ``best.pt`` says about how it was trained."""
        args = self.args
        return {"trained_on": list(args.data), "synthetic_pages": args.synthetic_pages,
                "synthetic_lines": args.synthetic_lines, "steps": self.step, "val": self.best, "seed": args.seed,
                "settings": asdict(self.settings)}


def _start_run(args: argparse.Namespace, run_dir: Path, config: dict, settings: CropSettings) -> _Run:
    """The seeded model (from ``--init-from`` when given) and optimizer, restored from ``last.pt`` on ``--resume``."""
    torch.manual_seed(args.seed)
    model = LineUNet(UNetConfig(tuple(args.widths)))
    if args.init_from:
        model.load_state_dict(LearnedSegmenter.load(args.init_from).model.state_dict())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    run = _Run(args, run_dir, config, settings, model, optimizer)
    if args.resume:
        state = torch.load(run_dir / "last.pt", map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        run.step, run.best = int(state["step"]), dict(state["best"])
        print(f"resuming {run_dir} at step {run.step} (best F1 so far {run.best['f1']:.4f} at step {run.best['step']})")
    return run


def _start_loggers(run: _Run) -> None:
    """The JSONL log, and Weights & Biases with ``--wandb``; each is told the config and the model's size."""
    args = run.args
    run.loggers = [JsonlLogger(run.run_dir)]
    if args.wandb:
        from training.experiments.wandb_logger import WandbLogger

        run.loggers.append(WandbLogger(project=args.wandb_project, num_samples=0))
    parameters = sum(p.numel() for p in run.model.parameters())
    for logger in run.loggers:
        logger.start({"run": {"resume": args.resume}, **run.config}, run.run_dir,
                     {"parameters": parameters, "size_mb": parameters * 4 / 2**20})


def _validate(run: _Run) -> None:
    """Score the whole ``--val-data`` pages; keep ``best.pt`` when F1 improved, and log."""
    run.model.eval()
    scores = evaluate_segmenter(run.model, run.args.val_data)
    run.model.train()
    improved = scores["f1"] > run.best["f1"]
    if improved:
        run.best = {"f1": scores["f1"], "step": run.step}
        save_segmenter(run.run_dir / "best.pt", run.model, run.settings.work_side, card=run.card())
    tqdm.write(f"step {run.step}: val F1 {scores['f1']:.4f} (P {scores['precision']:.3f} "
               f"R {scores['recall']:.3f}){' best' if improved else ''}")
    for logger in run.loggers:
        logger.log_val(0, run.step, scores, [])
        logger.log_checkpoint(run.run_dir / "best.pt", improved, scores)


def _train_step(run: _Run, images: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """One optimizer step on a batch of crops at the step's learning rate; returns the loss."""
    for group in run.optimizer.param_groups:
        group["lr"] = learning_rate(run.step, run.args)
    logits = run.model(images)  # (B, 2, crop/2, crop/2)
    loss = segmentation_loss(logits, targets, run.args.core_weight)
    run.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    run.optimizer.step()
    run.step += 1
    return loss


def _loop(run: _Run, dataset: CropDataset) -> tuple[str, float]:
    """Train from ``run.step`` to ``--steps`` (or ``--max-minutes``, or Ctrl-C); returns (why it stopped, start)."""
    args = run.args
    sampler = range(run.step * args.batch_size, args.steps * args.batch_size)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=1,
                                         persistent_workers=False)
    started = time.monotonic()
    bar = tqdm(total=args.steps, initial=run.step, desc="segmenter", unit="step", dynamic_ncols=True)
    run.model.train()
    stop_reason = "finished"
    try:
        for images, targets in loader:
            loss = _train_step(run, images, targets)
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.4f}", best_f1=f"{run.best['f1']:.3f}")
            if run.step % 10 == 0:
                for logger in run.loggers:
                    logger.log_train(run.step, {"loss": loss.item(), "lr": run.optimizer.param_groups[0]["lr"]})
            if args.val_data and (run.step % args.eval_every == 0 or run.step == args.steps):
                _validate(run)
            if run.step % args.save_every == 0:
                run.save_last()
            if args.max_minutes and time.monotonic() - started > args.max_minutes * 60:
                stop_reason = f"reached --max-minutes {args.max_minutes}"
                break
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    finally:
        bar.close()
    return stop_reason, started


def _finish(run: _Run, stop_reason: str, started: float) -> dict:
    """Save ``last.pt`` (and ``best.pt`` when nothing validated), write ``summary.json`` and say how to go on."""
    args, step, best, run_dir = run.args, run.step, run.best, run.run_dir
    run.save_last()
    if not args.val_data:
        save_segmenter(run_dir / "best.pt", run.model, run.settings.work_side, card=run.card())
    summary = {"step": step, "steps": args.steps, "stopped": stop_reason, "best": best,
               "minutes": (time.monotonic() - started) / 60}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    for logger in run.loggers:
        logger.finish(summary)
    print(f"{stop_reason} at step {step}; best val F1 {best['f1']:.4f} at step {best['step']}; "
          f"resume with --resume --run-dir {run_dir}" if step < args.steps else
          f"done: best val F1 {best['f1']:.4f} at step {best['step']} ({run_dir / 'best.pt'})")
    return summary


def train(argv: list[str] | None = None) -> dict:
    """Run the command with ``argv``; returns the summary written to ``summary.json``."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    run_dir, config = _open_run_dir(args)
    dataset, settings = _crop_dataset(args)
    run = _start_run(args, run_dir, config, settings)
    _start_loggers(run)
    stop_reason, started = _loop(run, dataset)
    return _finish(run, stop_reason, started)


def main(argv: list[str] | None = None) -> None:
    """The console entry point (``text-recognizer-train-segmenter``)."""
    train(argv)


if __name__ == "__main__":
    main()
