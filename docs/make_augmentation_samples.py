"""Render docs/augmentation_samples.png: real lines (left-top, "original") and augmented versions.

Each block shows one line as stored (IAM's binarised ink), then ``--per-line`` augmented draws of
the training pipeline (``text_recognizer.data.augment``), and last the augmented image as the model
sees it after the stem (ink high, shown inverted back to dark ink for readability).

The committed picture starts from built-in synthetic lines, binarised to solid black ink on white
like IAM's lines (IAM images must not be committed). ``--iam`` uses the development copy
``../shared/data/iam/val`` instead, for looking at locally only.

Usage:
    python docs/make_augmentation_samples.py [--seed 0] [--lines 4] [--per-line 3] [--iam]
        [--out docs/augmentation_samples.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from text_recognizer.data.augment import build_augmentation
from text_recognizer.data.folder import open_image, read_labels
from text_recognizer.data.synthetic import SyntheticLines
from text_recognizer.stem import preprocess

ROOT = Path(__file__).resolve().parents[1]

DEV_VAL = ROOT.parent / "shared" / "data" / "iam" / "val"
MAX_WIDTH = 1100


def _lines(count: int, seed: int, iam: bool) -> tuple[list[tuple[Image.Image, str]], str]:
    if iam:
        records = read_labels(DEV_VAL)
        rng = np.random.default_rng(seed)
        picks = rng.choice(len(records), size=count, replace=False)
        return [(open_image(records[i].path), records[i].text) for i in picks], "IAM val (development copy)"
    ds = SyntheticLines(count, seed=seed)
    binarised = [(image.point(lambda v: 0 if v < 150 else 255), text) for image, text in (ds[i] for i in range(count))]
    return binarised, "synthetic lines, binarised like IAM"


def _fit(image: Image.Image, height: int = 64) -> Image.Image:
    image = image.convert("L")
    image = image.resize((max(1, round(image.width * height / image.height)), height), Image.Resampling.BILINEAR)
    return image.crop((0, 0, min(image.width, MAX_WIDTH), height))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lines", type=int, default=4)
    ap.add_argument("--per-line", type=int, default=3)
    ap.add_argument("--iam", action="store_true", help="use ../shared/data/iam/val (local viewing only; never commit)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("augmentation_samples.png")))
    args = ap.parse_args()

    items, source = _lines(args.lines, args.seed, args.iam)
    augment = build_augmentation(generator=torch.Generator().manual_seed(args.seed))
    rows: list[tuple[str, Image.Image]] = []
    for image, text in items:
        rows.append((f"original: {text}", _fit(image)))
        last = image
        for k in range(args.per_line):
            last = augment(image)
            rows.append((f"augmented #{k + 1}", _fit(last)))
        stem = preprocess(last, 64)[0].numpy()  # (64, W) ink high
        rows.append((f"after the stem (augmented #{args.per_line}, shown dark-on-light)",
                     _fit(Image.fromarray(((1.0 - stem) * 255).astype(np.uint8), mode="L"))))
    label_h, gap = 13, 5
    sheet = Image.new("L", (MAX_WIDTH + 8, 18 + len(rows) * (64 + label_h + gap) + 4), 255)
    draw = ImageDraw.Draw(sheet)
    draw.text((4, 3), f"Training augmentation ({source}); seed {args.seed}", fill=0)
    y = 18
    for label, image in rows:
        draw.text((4, y), label[:170], fill=90 if label.startswith("aug") else 0)
        sheet.paste(image, (4, y + label_h))
        y += 64 + label_h + gap
    sheet = sheet.point(lambda v: (v // 8) * 8 + 4)  # 32 grey levels: a much smaller PNG, same look
    sheet.save(args.out, optimize=True)
    print(f"wrote {args.out} ({sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
