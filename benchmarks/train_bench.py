"""Training throughput (lines per second) of the default model, against the plain LineCNN baseline
and against the same CRNN with a per-window CNN (``--shared-cnn false``, the previous default).

    python benchmarks/train_bench.py [--steps 20] [--batch-size 16] [--threads N]

Both models see the same pre-generated synthetic batches (generation excluded), and each step is a
full forward + CTC loss + backward + RMSprop update. Prints lines/s for each and the ratio.
"""

from __future__ import annotations

import argparse
import time

import torch

from text_recognizer.codec import Codec
from text_recognizer.data.lines import EncodedLines, collate_lines
from text_recognizer.data.synthetic import SyntheticLines
from text_recognizer.models import ModelConfig, build_model
from training.objective import compute_loss


def lines_per_second(kind: str, batches, steps: int, **overrides) -> float:
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind=kind, num_classes=Codec().num_classes, **overrides))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    seen, elapsed = 0, 0.0
    for i in range(steps + 2):
        batch = batches[i % len(batches)]
        start = time.perf_counter()
        loss, _ = compute_loss(model, batch, "ctc", "torch")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i >= 2:  # the first two steps warm up allocators and kernels
            elapsed += time.perf_counter() - start
            seen += len(batch.texts)
    return seen / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model")
    parser.add_argument("--batch-size", type=int, default=16, help="lines per batch")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    height = ModelConfig().height
    data = EncodedLines(SyntheticLines(args.batch_size * 4, seed=0, height=height), Codec(), height)
    batches = [collate_lines([data[i] for i in range(b, b + args.batch_size)])
               for b in range(0, len(data), args.batch_size)]
    widths = torch.cat([b.widths for b in batches]).float()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}, "
          f"mean line width {widths.mean():.0f} px at {ModelConfig().height} px")
    baseline = lines_per_second("line_cnn", batches, args.steps)
    default = lines_per_second("crnn", batches, args.steps)
    per_window = lines_per_second("crnn", batches, args.steps, shared_cnn=False)
    print(f"line_cnn (baseline):     {baseline:6.1f} lines/s")
    print(f"crnn (default):          {default:6.1f} lines/s   ratio to baseline {default / baseline:.2f}")
    print(f"crnn, per-window CNN:    {per_window:6.1f} lines/s   default / per-window {default / per_window:.2f}")


if __name__ == "__main__":
    main()
