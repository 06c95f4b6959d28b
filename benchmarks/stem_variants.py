"""Out-of-domain CER of one checkpoint under stem variants (no training): is a stem change worth it?

Variants, applied to the grey image before the shared stem's resize and ink normalisation:
``base`` (the stem as it is), ``flat`` (background flattening: divide by a grey closing, evens out
uneven light), ``crop`` (keep only the rows around the densest ink band: loose crops made tight)
and ``flat+crop``. Prints natural-spacing CER per folder and variant.

    python benchmarks/stem_variants.py --checkpoint best.pt \
        --data ../shared/data/stanford_memorials_1905 ../shared/data/gw_washington_1755
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from scipy import ndimage

from text_recognizer import stem
from text_recognizer.data.folder import open_image, read_labels
from text_recognizer.data.tokenization import cer_natural
from text_recognizer.recognizer import LineRecognizer

VARIANTS = ("base", "flat", "crop", "flat+crop")


def flatten_background(gray: np.ndarray) -> np.ndarray:
    """Divide dark-ink-on-light luminance by its smoothed grey closing (the paper without the ink)."""
    k = max(3, int(gray.shape[0] * 0.5)) | 1
    paper = ndimage.uniform_filter(ndimage.grey_closing(gray, size=(k, k)), size=k)
    return np.clip(gray / np.maximum(paper, 1e-3), 0, 1).astype(np.float32)


def crop_to_ink_band(gray: np.ndarray) -> np.ndarray:
    """Rows of the densest ink band, widened by 60% of its height on each side (for ascenders/descenders)."""
    profile = (stem.normalise_ink(gray) > 0.35).mean(axis=1)
    if profile.max() <= 0:
        return gray
    core = np.where(profile > 0.15 * profile.max())[0]
    top, bottom = int(core.min()), int(core.max())
    pad = 0.6 * (bottom - top + 1)
    return gray[max(0, int(top - pad)): min(gray.shape[0], int(bottom + pad) + 1)]


def line_tensor(image: Image.Image, variant: str, height: int) -> torch.Tensor:
    gray = stem.to_grayscale(image)
    if "flat" in variant and gray.mean() > 0.5:
        gray = flatten_background(gray)
    if "crop" in variant:
        gray = crop_to_ink_band(gray)
    width = max(1, round(gray.shape[1] * height / gray.shape[0]))
    resized = Image.fromarray(gray, mode="F").resize((width, height), Image.Resampling.BILINEAR, reducing_gap=2.0)
    return torch.from_numpy(np.ascontiguousarray(stem.normalise_ink(np.asarray(resized))))[None]  # (1, H, W)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=None, help="model (default: the bundled model)")
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="folders with images + labels.tsv")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS, help="stem variants")
    args = parser.parse_args()
    recognizer = LineRecognizer(args.checkpoint)
    for folder in args.data:
        records = read_labels(folder)
        images = [open_image(record.path) for record in records]
        references = [record.text for record in records]
        for variant in args.variants:
            tensors = [line_tensor(image, variant, recognizer.height) for image in images]
            predictions = [line.text for line in recognizer.predict_tensors(tensors)]
            print(f"{folder.name:28s} {variant:10s} CER {cer_natural(references, predictions):.4f}", flush=True)


if __name__ == "__main__":
    main()
