"""Cache a model's CTC log-probabilities over a dataset folder, so decoders can be tuned without the model.

    PYTHONPATH=. python benchmarks/decode_logits.py --data ../shared/data/iam/val --out /tmp/lm/val.pt

Saves ``{files, references, log_probs: [(T, C) float16], widths: [original px], input_widths: [stem px]}``;
running the model is most of the decode time on CPU, and tuning LM weights needs many decodes of the same lines.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from text_recognizer.data.folder import open_image, read_labels
from text_recognizer.recognizer import LineRecognizer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with images and labels.tsv")
    parser.add_argument("--out", type=Path, required=True, help="output .pt file")
    parser.add_argument("--checkpoint", type=Path, default=None, help="model (default: bundled)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    recognizer = LineRecognizer(args.checkpoint)
    records = sorted(read_labels(args.data), key=lambda r: r.path.name)
    out = {"files": [], "references": [], "log_probs": [], "widths": [], "input_widths": []}
    start = time.perf_counter()
    for record in records:
        image = open_image(record.path)
        tensor = recognizer.preprocess(image)
        with torch.inference_mode():
            logits = recognizer.model(tensor[None], torch.tensor([tensor.shape[-1]]))  # (1, T, C)
            frames = int(recognizer.model.output_lengths(torch.tensor([tensor.shape[-1]]))[0])
        out["files"].append(record.path.name)
        out["references"].append(record.text)
        out["log_probs"].append(logits[0, :frames].float().log_softmax(-1).half())
        out["widths"].append(image.width)
        out["input_widths"].append(tensor.shape[-1])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, args.out)
    print(f"{len(records)} lines in {time.perf_counter() - start:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
