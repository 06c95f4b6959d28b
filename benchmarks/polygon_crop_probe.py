"""Does a polygon crop (the flat fill outside a line's polygon) cost the model anything? No training.

Why: both out-of-domain development sets were cut from page scans along kraken line polygons, with
every pixel outside the polygon set to the crop's median grey (a third of each image), and users' own
PAGE-XML / ALTO lines are cut the same way. IAM's lines are rectangles, so the model never saw such a
boundary in training. Two measurements decide whether a polygon-crop augmentation is worth building:

1. ``--iam``: IAM val's tuning half (the first 920 lines by file name) read greedy as it is, and
   after a synthetic polygon crop: the ink's column-wise upper and lower envelope, smoothed over 40%
   of the line height, grown by 2 px and moved ``--tighten`` x height into the line (0 keeps all the
   ink; > 0 cuts ascenders and descenders), everything outside it set to the median grey.
2. ``--boundary``: in each out-of-domain folder, the share of ink pixels that touch the flat fill, i.e.
   how much ink the real polygons cut.

    python benchmarks/polygon_crop_probe.py --iam ../shared/data/iam/val --tighten 0 0.08 \
        --boundary ../shared/data/stanford_memorials_1905 ../shared/data/gw_washington_1755
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from text_recognizer import stem
from text_recognizer.data.folder import open_image, read_labels
from text_recognizer.data.tokenization import cer_natural
from text_recognizer.recognizer import LineRecognizer, oriented_size

INK = 0.4  # normalised ink level counted as a stroke


def ink_mask(gray: np.ndarray) -> np.ndarray:
    """``(h, w)`` uint8 grey -> bool strokes, through the stem's own polarity and contrast normalisation."""
    return stem.normalise_ink(gray.astype(np.float32) / 255.0) > INK


def polygon_crop(image: Image.Image, tighten: float = 0.0, grow: int = 2) -> Image.Image:
    """A kraken-like polygon crop of a rectangular line image: outside the ink envelope -> median grey."""
    gray = np.asarray(image.convert("L"))
    h, w = gray.shape
    ink = ink_mask(gray)
    columns = np.flatnonzero(ink.any(axis=0))
    if columns.size < 2:
        return image
    rows = np.arange(h)[:, None]
    top = np.where(ink, rows, h).min(axis=0).astype(float)
    bottom = np.where(ink, rows, -1).max(axis=0).astype(float)
    top = np.interp(np.arange(w), columns, top[columns])  # columns without ink: bridged
    bottom = np.interp(np.arange(w), columns, bottom[columns])
    window = max(3, int(0.4 * h))
    top = ndimage.uniform_filter1d(ndimage.minimum_filter1d(top, window), window) + tighten * h
    bottom = ndimage.uniform_filter1d(ndimage.maximum_filter1d(bottom, window), window) - tighten * h
    inside = (rows >= top[None] - grow) & (rows <= bottom[None] + grow)
    return Image.fromarray(np.where(inside, gray, np.median(gray)).astype(np.uint8))


def ink_on_boundary(gray: np.ndarray) -> tuple[float, float]:
    """(share of the image that is flat fill, share of the ink touching it) for one polygon-cropped line."""
    flat = gray == np.median(gray)
    fill = ndimage.binary_dilation(ndimage.binary_erosion(flat, np.ones((5, 5))), np.ones((5, 5)))  # big flat areas
    edge = ndimage.binary_dilation(fill, np.ones((3, 3))) & ~fill
    ink = ink_mask(gray)
    return float(fill.mean()), float((ink & edge).sum() / max(int(ink.sum()), 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iam", type=Path, help="IAM val folder (the tuning half is read)")
    parser.add_argument("--tighten", type=float, nargs="*", default=[0.0], help="envelope moved in by this x height")
    parser.add_argument("--boundary", type=Path, nargs="*", default=[], help="polygon-cropped line folders")
    parser.add_argument("--checkpoint", default=None, help="default: the bundled model")
    args = parser.parse_args()

    if args.iam:
        recognizer = LineRecognizer(args.checkpoint)
        records = sorted(read_labels(args.iam), key=lambda r: r.path.name)[:920]
        references = [r.text for r in records]
        for tighten in [None, *args.tighten]:
            images = [open_image(r.path) for r in records]
            if tighten is not None:
                images = [polygon_crop(image, tighten) for image in images]
            lines = recognizer.predict_tensors([recognizer.preprocess(i) for i in images],
                                               [oriented_size(i) for i in images])
            name = "rectangle (as given)" if tighten is None else f"polygon crop, tighten {tighten:g}"
            print(f"IAM val tuning half, {name}: CER {100 * cer_natural(references, [x.text for x in lines]):.2f}%")
    for folder in args.boundary:
        stats = np.array([ink_on_boundary(np.asarray(open_image(r.path).convert("L"))) for r in read_labels(folder)])
        cut = stats[:, 1]
        print(f"{folder.name}: fill {100 * stats[:, 0].mean():.1f}% of pixels; ink touching it: median "
              f"{100 * np.median(cut):.2f}%, 90th percentile {100 * np.percentile(cut, 90):.2f}%, "
              f"lines over 1%: {int((cut > 0.01).sum())} of {len(cut)}")


if __name__ == "__main__":
    main()
