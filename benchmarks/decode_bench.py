"""Single-line decode time on the CPU: a checkpoint against the per-window CNN of the same shape.

    python benchmarks/decode_bench.py [--checkpoint PATH] [--threads 2] [--repeats 20] [--widths 1638 1000 600] [--onnx]

For each line width (the lines are 64 px high, as IAM's, so the stem resizes them to the model's
height) it times ``LineRecognizer.predict`` end to end (stem, model, greedy decoding) on one line,
after two warm-up calls, and prints the median. The baseline is the same architecture with
``shared_cnn=False`` (one CNN per pixel window: overlapping windows recomputed), measured in the
same run with the same weights layout and random weights: decode time does not depend on what the
weights learned. Default checkpoint: the bundled model.

``--onnx`` also times the same checkpoint exported to ONNX and read by ``OnnxLineRecognizer``
(ONNX Runtime with the same number of threads; needs ``requirements-onnx.txt``), end to end the same
way, and prints PyTorch / ONNX Runtime (> 1: ONNX Runtime faster).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint
from text_recognizer.models import build_model
from text_recognizer.recognizer import LineRecognizer, default_checkpoint


def line_image(width: int, seed: int = 0) -> Image.Image:
    """A 64-px-high grey line with dark strokes (content does not change the decode time)."""
    rng = np.random.default_rng(seed)
    pixels = np.full((64, width), 235, np.uint8)
    for x in range(0, width - 12, 9):
        top = int(rng.integers(12, 30))
        pixels[top : top + int(rng.integers(14, 30)), x : x + 3] = 30
    return Image.fromarray(pixels, "L")


def median_ms(recognizer, image: Image.Image, repeats: int) -> float:
    """Median milliseconds of ``recognizer.predict([image])`` after two warm-up calls."""
    for _ in range(2):
        recognizer.predict([image])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        recognizer.predict([image])
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def per_window_twin(path: Path, directory: Path) -> Path:
    """A checkpoint with the same architecture but ``shared_cnn=False`` and random weights."""
    bundle = load_checkpoint(path, map_location="cpu")
    config = dataclasses.replace(bundle.model_config, shared_cnn=False)
    torch.manual_seed(0)
    out = directory / "per_window.pt"
    save_checkpoint(bundle.replace(model_config=config, model_state=build_model(config).state_dict()), out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=None, help="model to time (default: the bundled model)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per width")
    parser.add_argument("--widths", type=int, nargs="+", default=[1638, 1000, 600], help="line widths at 64 px high")
    parser.add_argument("--onnx", action="store_true", help="also time the model exported to ONNX (ONNX Runtime)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    path = args.checkpoint or default_checkpoint()
    model = LineRecognizer(path)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = LineRecognizer(per_window_twin(path, Path(tmp))) if model.config.shared_cnn else None
        onnx = None
        if args.onnx:
            from text_recognizer.export import export_recognizer
            from text_recognizer.onnx_recognizer import OnnxLineRecognizer

            onnx = OnnxLineRecognizer(export_recognizer(model, Path(tmp) / "model.onnx", "onnx"), threads=args.threads)
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {path} "
              f"(height {model.config.height}, shared_cnn={model.config.shared_cnn})")
        onnx_header = f" {'onnx ms':>8} {'torch/onnx':>10}" if onnx is not None else ""
        print(f"{'width@64px':>10} {'model ms':>9} {'per-window ms':>14} {'ratio':>6}{onnx_header}")
        for width in args.widths:
            image = line_image(width)
            ours = median_ms(model, image, args.repeats)
            row = f"{width:>10} {ours:>9.1f}"
            if baseline is None:
                row += f" {'-':>14} {'-':>6}"
            else:
                theirs = median_ms(baseline, image, args.repeats)
                row += f" {theirs:>14.1f} {theirs / ours:>6.2f}"
            if onnx is not None:
                exported = median_ms(onnx, image, args.repeats)
                row += f" {exported:>8.1f} {ours / exported:>10.2f}"
            print(row)


if __name__ == "__main__":
    main()
