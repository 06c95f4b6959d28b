"""ONNX Runtime vs PyTorch on the CPU: the same greedy text on real lines, and the decode time per line.

    python benchmarks/onnx_bench.py [--checkpoint PATH] [--data ../shared/data/iam/val] [--lines 200]
                                    [--threads 2] [--repeats 3] [--batch-size 16] [--single 40]

Exports the checkpoint (default: the bundled model) to ONNX in a temporary folder, reads the first
``--lines`` lines of ``--data`` with ``LineRecognizer`` (PyTorch) and ``OnnxLineRecognizer`` (ONNX
Runtime), and prints how many greedy texts are identical, the largest log-probability difference on
the first batch, and both CERs. Then it times the model part (stem done once beforehand, greedy
decoding included) in two ways, alternating the runtimes so that load from other jobs hits both alike:
batched (``--batch-size`` lines of similar width per call) and one line per call (the first
``--single`` lines). It prints medians over ``--repeats`` and the ratio PyTorch / ONNX Runtime
(> 1: ONNX Runtime faster). Both runtimes get ``--threads`` intra-op threads.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from text_recognizer.data.folder import read_labels
from text_recognizer.data.tokenization import detokenize
from text_recognizer.export import export_recognizer
from text_recognizer.metrics import cer
from text_recognizer.onnx_recognizer import OnnxLineRecognizer
from text_recognizer.recognizer import LineRecognizer

# ../shared/data next to the checkout (or next to the worktree folder of a git worktree)
IAM_VAL = next((p / "shared" / "data" / "iam" / "val" for p in Path(__file__).resolve().parents[1:4]
                if (p / "shared" / "data" / "iam" / "val").is_dir()), Path("../shared/data/iam/val"))


def timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=None, help="model (default: the bundled model)")
    parser.add_argument("--data", type=Path, default=IAM_VAL, help="line folder with labels.tsv")
    parser.add_argument("--lines", type=int, default=200, help="lines compared and timed batched")
    parser.add_argument("--single", type=int, default=40, help="lines timed one per call")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads for both runtimes")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per runtime (median)")
    parser.add_argument("--batch-size", type=int, default=16, help="lines per call in the batched timing")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch_rec = LineRecognizer(args.checkpoint, batch_size=args.batch_size)
    records = read_labels(args.data)[: args.lines]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = export_recognizer(torch_rec, Path(tmp) / "model.onnx", "onnx")
        export_s = time.perf_counter() - start
        onnx_rec = OnnxLineRecognizer(path, batch_size=args.batch_size, threads=args.threads)
        import onnxruntime

        print(f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, {args.threads} threads; "
              f"{torch_rec.path}; {len(records)} lines of {args.data}; ONNX export {export_s:.1f} s")
        lines = [torch_rec.preprocess(r.path) for r in records]  # the stem once, shared by both

        ours = torch_rec.predict_tensors(lines)
        theirs = onnx_rec.predict_tensors(lines)
        same = sum(a.text == b.text for a, b in zip(ours, theirs))
        references = [detokenize(r.text) for r in records]
        print(f"identical greedy texts: {same} / {len(lines)}; CER between the two outputs "
              f"{cer([a.text for a in ours], [b.text for b in theirs]):.5f}; max confidence difference "
              f"{max(abs(a.confidence - b.confidence) for a, b in zip(ours, theirs)):.2e}")
        print(f"CER vs references: PyTorch {cer(references, [a.text for a in ours]):.4f}, "
              f"ONNX Runtime {cer(references, [b.text for b in theirs]):.4f}")
        batch = lines[: args.batch_size]
        widths = torch.tensor([t.shape[-1] for t in batch])
        padded = torch.zeros(len(batch), 1, torch_rec.height, int(widths.max()))
        for row, t in enumerate(batch):
            padded[row, :, :, : t.shape[-1]] = t
        with torch.inference_mode():
            reference = torch_rec.model(padded, widths).log_softmax(-1).numpy()
        log_probs, _ = onnx_rec.session.run(None, {"images": padded.numpy(), "widths": widths.numpy()})
        print(f"max |log-prob difference| on the first batch of {len(batch)} (padded): "
              f"{float(np.abs(log_probs - reference).max()):.2e}")

        results = {"torch": {"batched": [], "single": []}, "onnx": {"batched": [], "single": []}}
        runtimes = {"torch": torch_rec, "onnx": onnx_rec}
        single = lines[: args.single]
        for rec in runtimes.values():  # warm-up
            rec.predict_tensors(lines[:4])
        for _ in range(args.repeats):
            for name, rec in runtimes.items():
                results[name]["batched"] += timed(lambda r=rec: r.predict_tensors(lines), 1)
                results[name]["single"] += timed(lambda r=rec: [r.predict_tensors([t]) for t in single], 1)
        print(f"{'mode':<22} {'PyTorch ms/line':>16} {'ONNX RT ms/line':>16} {'ratio':>6}")
        for mode, count in (("batched", len(lines)), ("single", len(single))):
            t = statistics.median(results["torch"][mode]) / count * 1e3
            o = statistics.median(results["onnx"][mode]) / count * 1e3
            label = f"batch {args.batch_size}" if mode == "batched" else "one line per call"
            print(f"{label:<22} {t:>16.2f} {o:>16.2f} {t / o:>6.2f}")


if __name__ == "__main__":
    main()
