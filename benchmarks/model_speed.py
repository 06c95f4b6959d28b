"""Per-line greedy read time of two checkpoints, end to end, interleaved in one process.

    PYTHONPATH=. python benchmarks/model_speed.py --baseline OLD.pt --candidate NEW.pt --data ../shared/data/iam/val

Why: a model change (here a wider output layer for the Latin alphabet) must not make reading slower, and a
timing is only worth its ratio against a baseline measured in the same run. Each round reads the same lines,
one at a time, with ``LineRecognizer.predict_tensors`` (model + greedy decoding; the stem runs once
beforehand), alternating the two models so load from other jobs hits both alike. Prints medians and the
candidate / baseline ratio (< 1.10 keeps within 10%).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from text_recognizer.data.folder import open_image, read_labels
from text_recognizer.recognizer import LineRecognizer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="checkpoint to compare against")
    parser.add_argument("--candidate", type=Path, required=True, help="checkpoint being measured")
    parser.add_argument("--data", type=Path, required=True, help="dataset folder (images + labels.tsv)")
    parser.add_argument("--lines", type=int, default=40, help="lines of the folder to time (every k-th by name)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    records = sorted(read_labels(args.data), key=lambda r: r.path.name)
    picked = records[:: max(1, len(records) // args.lines)][: args.lines]
    models = {"baseline": LineRecognizer(args.baseline, decoder="greedy"),
              "candidate": LineRecognizer(args.candidate, decoder="greedy")}
    tensors = {k: [m.preprocess(open_image(r.path)) for r in picked] for k, m in models.items()}
    times: dict[str, list[float]] = {k: [] for k in models}
    for _ in range(args.rounds):
        for key, model in models.items():
            start = time.perf_counter()
            for tensor in tensors[key]:
                model.predict_tensors([tensor])
            times[key].append((time.perf_counter() - start) / len(picked))
    base = statistics.median(times["baseline"])
    print(f"{len(picked)} lines of {args.data}, {args.rounds} rounds, torch threads {torch.get_num_threads()}")
    for key, values in times.items():
        median = statistics.median(values)
        print(f"  {key:10s} {getattr(args, key).name:28s} {1000 * median:7.2f} ms/line  {median / base:5.3f}x baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
