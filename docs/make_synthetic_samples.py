"""Render docs/synthetic_samples.png: a column of generated lines with their texts.

Usage: python docs/make_synthetic_samples.py [--seed 0] [--count 12] [--out docs/synthetic_samples.png]
       python docs/make_synthetic_samples.py --fonts DIR [--augment-p 0.5] --out docs/font_samples.png
(``--fonts``: lines drawn with a folder's handwriting fonts, as ``run_experiment.py --fonts`` trains
on them, augmented at ``--augment-p`` like the trainer does.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from PIL import Image, ImageDraw

from text_recognizer.data.augment import AugmentConfig, build_augmentation
from text_recognizer.data.font_lines import FontLines
from text_recognizer.data.lines import MappedLines
from text_recognizer.data.synthetic import SyntheticLines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--height", type=int, default=64)
    ap.add_argument("--fonts", default="", help="folder of handwriting fonts: draw font lines instead")
    ap.add_argument("--augment-p", type=float, default=0.5, help="share of font lines augmented (with --fonts)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("synthetic_samples.png")))
    args = ap.parse_args()

    if args.fonts:
        torch.manual_seed(args.seed)  # the augmentation draws from torch's generator
        augment = build_augmentation(AugmentConfig(apply_p=args.augment_p))
        ds = MappedLines(FontLines(args.fonts, args.count, seed=args.seed, height=args.height), augment)
    else:
        ds = SyntheticLines(args.count, seed=args.seed, height=args.height)
    items = [ds[i] for i in range(args.count)]
    label_h = 14
    width = max(img.width for img, _ in items) + 8
    sheet = Image.new("L", (width, sum(img.height + label_h + 6 for img, _ in items) + 4), 255)
    draw = ImageDraw.Draw(sheet)
    y = 4
    for img, text in items:
        draw.text((4, y), text, fill=0)
        sheet.paste(img, (4, y + label_h))
        y += img.height + label_h + 6
    sheet.save(args.out, optimize=True)
    print(f"wrote {args.out} ({sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
