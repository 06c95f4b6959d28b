"""Render docs/synthetic_samples.png: a column of generated lines with their texts.

Usage: python docs/make_synthetic_samples.py [--seed 0] [--count 12] [--out docs/synthetic_samples.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image, ImageDraw

from text_recognizer.data.synthetic import SyntheticLines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--height", type=int, default=64)
    ap.add_argument("--out", default=str(Path(__file__).with_name("synthetic_samples.png")))
    args = ap.parse_args()

    ds = SyntheticLines(args.count, seed=args.seed, height=args.height)
    items = [ds[i] for i in range(len(ds))]
    label_h = 14
    width = max(img.width for img, _ in items) + 8
    sheet = Image.new("L", (width, len(items) * (args.height + label_h + 6) + 4), 255)
    draw = ImageDraw.Draw(sheet)
    y = 4
    for img, text in items:
        draw.text((4, y), text, fill=0)
        sheet.paste(img, (4, y + label_h))
        y += args.height + label_h + 6
    sheet.save(args.out, optimize=True)
    print(f"wrote {args.out} ({sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
