"""How much of the estimated slant the stem should remove: CER of one checkpoint per strength.

Reads every line of each dataset folder with ``text_recognizer.stem.deslant_line`` at each
``--strengths`` value (0 = the stem without deslanting) and prints natural-spacing CER for the
first and second half of each folder (labels.tsv order) and for all of it, so a strength can be
chosen on one half of IAM val and checked on the other and on out-of-domain sets.

    python benchmarks/deslant_strength.py --data ../shared/data/iam/val ../shared/data/gw_washington_1755 \
        --strengths 0,0.5,0.6,0.75,1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from text_recognizer.data.folder import open_image, read_labels
from text_recognizer.data.tokenization import cer_natural
from text_recognizer.recognizer import LineRecognizer
from text_recognizer.stem import deslant_line, preprocess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default=None, help="model (default: the bundled one)")
    parser.add_argument("--data", nargs="+", required=True, help="dataset folders (images + labels.tsv)")
    parser.add_argument("--strengths", default="0,0.5,0.6,0.75,1", help="comma-separated shares of the slant")
    args = parser.parse_args()
    torch.set_num_threads(2)
    recognizer = LineRecognizer(args.checkpoint)
    strengths = [float(s) for s in args.strengths.split(",")]
    print(f"{'data':32s} {'strength':>8s} {'CER 1st half':>12s} {'CER 2nd half':>12s} {'CER all':>8s}")
    for folder in map(Path, args.data):
        records = read_labels(folder)
        references = [record.text for record in records]
        plain = [preprocess(open_image(record.path), recognizer.height)[0].numpy() for record in records]
        half = len(records) // 2
        for strength in strengths:
            lines = [torch.from_numpy(deslant_line(ink, strength) if strength else ink)[None] for ink in plain]
            texts = [line.text for line in recognizer.predict_tensors(lines)]
            cers = [cer_natural(references[a:b], texts[a:b]) for a, b in ((0, half), (half, None), (0, None))]
            print(f"{folder.name:32s} {strength:8.2f} " + " ".join(f"{c:12.4f}" for c in cers[:2]) + f" {cers[2]:8.4f}",
                  flush=True)


if __name__ == "__main__":
    main()
