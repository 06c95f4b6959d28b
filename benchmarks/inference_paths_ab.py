"""Paired A/B of the model's inference-only fast paths, in one process, calls alternating.

    PYTHONPATH=. python benchmarks/inference_paths_ab.py [--widths 1638 1000] [--pairs 60] [--threads 2]

The fast paths (``text_recognizer.models.pooling.MaxPool`` without gradients: strided maxima
instead of ``max_pool2d`` with indices; ``blocks.all_full``: flip instead of gather and no padding
mask for a line alone) give the same numbers as the general ones, so the only question is time.
This box's timings drift by +-25% between runs minutes apart, more than the difference, so both
variants are timed in the same process, one call each in turn, and the median of the paired
ratios is printed (> 1: the fast paths are faster), with both medians and whether the texts agree.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from benchmarks.decode_bench import line_image
from text_recognizer.models import blocks, pooling
from text_recognizer.recognizer import LineRecognizer, default_checkpoint

FAST = {"pool": pooling.MaxPool.forward, "all_full": blocks.all_full}
GENERAL = {"pool": lambda self, x: F.max_pool2d(x, self.kernel), "all_full": lambda lengths, size: False}


def use(paths: dict) -> None:
    """Switch the model code to one variant (module attributes the forward passes look up per call)."""
    pooling.MaxPool.forward = paths["pool"]
    blocks.all_full = paths["all_full"]


def timed_text(recognizer: LineRecognizer, image) -> tuple[float, str]:
    start = time.perf_counter()
    text = recognizer.predict([image])[0]
    return (time.perf_counter() - start) * 1e3, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=[1638, 1000], help="line widths at 64 px high")
    parser.add_argument("--pairs", type=int, default=60, help="timed calls per variant and width")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recognizer = LineRecognizer(default_checkpoint())
    print(f"torch {torch.__version__}, {args.threads} threads; the bundled model")
    print("width@64px  general ms  fast ms  paired general/fast  same text")
    try:
        for width in args.widths:
            image = line_image(width)
            for paths in (GENERAL, FAST, GENERAL, FAST):  # warm-up
                use(paths)
                recognizer.predict([image])
            general, fast, texts = [], [], set()
            for _ in range(args.pairs):
                for paths, times in ((GENERAL, general), (FAST, fast)):
                    use(paths)
                    ms, text = timed_text(recognizer, image)
                    times.append(ms)
                    texts.add(text)
            ratio = statistics.median(g / f for g, f in zip(general, fast))
            print(f"{width:10d}  {statistics.median(general):10.1f}  {statistics.median(fast):7.1f}"
                  f"  {ratio:19.2f}  {len(texts) == 1}")
    finally:
        use(FAST)


if __name__ == "__main__":
    main()
