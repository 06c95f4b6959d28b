"""Width-bucketed batches against plain shuffled batches: padding share and training lines/s.

    python benchmarks/bucket_bench.py [--data FOLDER ...] [--height 40] [--steps 20] [--batch-size 16]

Baseline: the same lines, the same default CRNN and the same number of steps, cut into batches in
plain shuffled order (``--bucket-batches 0``), measured in the same run. Prints, over one epoch's
order of the whole folder, the share of the padded batch area that is real line for both orders,
then times forward + CTC + backward + RMSprop on ``--steps`` batches of preloaded lines (image
decoding and augmentation excluded) in both orders. Without ``--data`` it renders 640 synthetic
lines into a temporary folder (their widths vary less than IAM's, so the gain is smaller).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import ConcatDataset

from text_recognizer.codec import Codec
from text_recognizer.data.folder import FolderLines
from text_recognizer.data.lines import EncodedLines, collate_lines
from text_recognizer.data.synthetic import SyntheticLines
from text_recognizer.models import ModelConfig, build_model
from training.loop.batching import bucketed_order, line_aspects, padding_efficiency
from training.loop.objective import compute_loss


def render_synthetic_folder(folder: Path, count: int, height: int) -> Path:
    lines = SyntheticLines(count, seed=0, height=height)
    rows = []
    for i in range(count):
        image, text = lines[i]
        image.save(folder / f"{i}.png")
        rows.append(f"{i}.png\t{text}\n")
    (folder / "labels.tsv").write_text("file\ttext\n" + "".join(rows), encoding="utf-8")
    return folder


def seconds_per_line(model, optimizer, batches) -> float:
    start = time.perf_counter()
    for batch in batches:
        loss, _ = compute_loss(model, batch, "ctc", "torch")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / sum(len(b.texts) for b in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="*", default=[],
                        help="dataset folders (default: synthetic lines rendered here)")
    parser.add_argument("--height", type=int, default=40, help="model input height")
    parser.add_argument("--batch-size", type=int, default=16, help="lines per batch")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per order")
    parser.add_argument("--chunk-batches", type=int, default=32, help="--bucket-batches value to measure")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folders = args.data or [str(render_synthetic_folder(Path(tmp), 640, args.height))]
        lines = ConcatDataset([FolderLines(f) for f in folders])
        widths = line_aspects(lines)
        bs, chunk = args.batch_size, args.chunk_batches
        order = torch.randperm(len(lines), generator=torch.Generator().manual_seed(0)).tolist()
        bucketed = bucketed_order(order, widths, bs, chunk, torch.Generator().manual_seed(1))
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
              f"{len(lines)} lines from {', '.join(folders)}, "
              f"aspect ratio median {np.median(widths):.1f} (min {min(widths):.1f}, max {max(widths):.1f})")
        print("real share of the padded batch area over one epoch: "
              f"shuffled {padding_efficiency(order, widths, bs):.3f}, "
              f"bucketed (chunks of {chunk} batches) {padding_efficiency(bucketed, widths, bs):.3f}")

        # The timed lines: the first chunk of the shuffled epoch, in both orders.
        drawn = order[: bs * min(chunk, args.steps)]
        samples = EncodedLines(lines, Codec(), args.height)
        loaded = {i: samples[i] for i in drawn}
        plain = [collate_lines([loaded[i] for i in drawn[s:s + bs]]) for s in range(0, len(drawn), bs)][: args.steps]
        regrouped = bucketed_order(drawn, widths, bs, chunk, torch.Generator().manual_seed(1))
        grouped = [collate_lines([loaded[i] for i in regrouped[s:s + bs]])
                   for s in range(0, len(regrouped), bs)][: args.steps]
        torch.manual_seed(0)
        model = build_model(ModelConfig(height=args.height, num_classes=Codec().num_classes))
        optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4)
        seconds_per_line(model, optimizer, plain[:2])  # warm-up
        shuffled_s = seconds_per_line(model, optimizer, plain)
        bucketed_s = seconds_per_line(model, optimizer, grouped)
        print(f"training, {len(plain)} steps of {bs} lines each: shuffled {1 / shuffled_s:.1f} lines/s, "
              f"bucketed {1 / bucketed_s:.1f} lines/s, ratio {shuffled_s / bucketed_s:.2f}x")


if __name__ == "__main__":
    main()
