"""Write a compact copy of a dataset folder: lines resized to one height, 16 grey levels, 4-bit PNG.

Useful to move a dataset to a remote training machine with a size limit (IAM's lines shrink
about 3x at 48 px), and to train on many small files fast. The copy keeps the folder format
(images + labels.tsv with file and text), so it trains like the original:

    python -m training.sources.pack_folder SRC DST --height 48
    python -m training.sources.pack_folder copiste_dun_jour/train cop40/train --height 40  # PAGE/ALTO pages: lines cut
    python -m training.sources.pack_folder iam/val mixval --height 40 --every 2 --prefix iam_ # every other line ...
    python -m training.sources.pack_folder copiste_dun_jour/val mixval --height 40 --prefix cop_ --append  # and these

A PAGE/ALTO folder's lines are cut through their polygons first (``text_recognizer.data.page``, cached), with
their labels normalised as training reads them (NFC, lookalikes folded, crossed-out marks as ``#``); lines with
empty text are left out. ``--append`` adds to an existing copy (``--prefix`` keeps the names apart), which is how
a validation set mixing two sources is made.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image

from text_recognizer.data.folder import read_labels
from text_recognizer.data.page import cut_layout_folder, is_layout_folder
from text_recognizer.metadata import MODEL_HEIGHT
from text_recognizer.normalization import normalizer


def source_lines(src: Path) -> list[tuple[Path, str]]:
    """``(image, text)`` of every line of a ``labels.tsv`` folder (texts verbatim) or PAGE/ALTO folder (cut)."""
    if is_layout_folder(src):
        return [(r.path, r.text) for r in cut_layout_folder(src, normalize=normalizer("NFC")).records if r.text.strip()]
    return [(r.path, r.text) for r in read_labels(src)]


def pack_folder(src: Path, dst: Path, height: int, levels: int = 16, every: int = 1, prefix: str = "",
                append: bool = False) -> int:
    """Pack every ``every``-th line of ``src`` into ``dst``; returns the number of lines written."""
    if every < 1:
        raise ValueError(f"--every must be >= 1, got {every}")
    dst.mkdir(parents=True, exist_ok=True)
    labels = dst / "labels.tsv"
    out = labels.read_text(encoding="utf-8").rstrip("\n").split("\n") if append and labels.exists() else ["file\ttext"]
    taken = set(row.split("\t", 1)[0] for row in out[1:])  # names already in DST (--append)
    mine: set[str] = set()  # names this call wrote
    palette = np.repeat(np.linspace(0, 255, levels).astype(np.uint8), 3).tolist()
    written = 0
    for index, (path, text) in enumerate(source_lines(src)[::every]):
        with Image.open(path) as image:
            gray = image.convert("L")
        width = max(1, round(gray.width * height / gray.height))
        gray = gray.resize((width, height), Image.Resampling.BILINEAR, reducing_gap=2.0)
        steps = np.round(np.asarray(gray, dtype=np.float32) / 255 * (levels - 1)).astype(np.uint8)
        packed = Image.fromarray(steps, mode="P")
        packed.putpalette(palette)
        name = f"{prefix}{path.with_suffix('.png').name}"
        if name in taken:
            raise ValueError(f"{dst} already holds {name}: give --prefix to keep the sources apart")
        if name in mine:  # cut lines of different pages may share a file name
            name = f"{prefix}{index:06d}_{path.with_suffix('.png').name}"
        mine.add(name)
        packed.save(dst / name, optimize=True, bits=4)
        out.append(f"{name}\t{text}")
        written += 1
    labels.write_text("\n".join(out) + "\n", encoding="utf-8")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path, help="dataset folder (images + labels.tsv, or PAGE/ALTO pages)")
    parser.add_argument("dst", type=Path, help="output folder")
    parser.add_argument("--height", type=int, default=MODEL_HEIGHT, help="line height in pixels (the model's)")
    parser.add_argument("--levels", type=int, default=16, help="grey levels kept (<= 16 for 4-bit PNG)")
    parser.add_argument("--every", type=int, default=1, help="keep every k-th line (in the folder's order)")
    parser.add_argument("--prefix", default="", help="put before every file name (to mix sources in one folder)")
    parser.add_argument("--append", action="store_true", help="add to DST's labels.tsv instead of replacing it")
    args = parser.parse_args()
    written = pack_folder(args.src, args.dst, args.height, args.levels, args.every, args.prefix, args.append)
    print(f"{written} lines -> {args.dst}")


if __name__ == "__main__":
    main()
