"""Write synthetic pages (``text_recognizer.segmentation.synthetic``) as a folder of images and PAGE-XML files.

    python -m training.segmenter.compose_pages --lines ../shared/data/iam/val --pages 50 --output synthetic-val/

Why: to look at what the segmenter trains on, and to score a segmenter (``training/evaluate.py --pages
--detection-only``) on layouts, papers and marks that a set of real pages may lack (two columns, stamps,
squared or textured paper), from line images of writers it was not trained on. The lines' texts are the
placeholder ``PLACEHOLDER`` (a composed line may join several crops), so such a folder scores line detection,
not reading.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from text_recognizer.data.folder import read_labels
from text_recognizer.page_formats import page_xml
from text_recognizer.page_result import PageLine, PageResult
from text_recognizer.segmentation.synthetic import SyntheticPage, compose_page

PLACEHOLDER = "synthetic"
#: Line images offered to each page (it takes as many as it holds).
CROPS_PER_PAGE = 150


def composed_pages(lines: str | Path, count: int, rng: np.random.Generator, letterheads: float = 0.0
                   ) -> Iterator[SyntheticPage]:
    """``count`` pages composed from the line images of the labels.tsv folder ``lines``, each offered
    ``CROPS_PER_PAGE`` random crops (read lazily: a page takes only as many as it holds, about 30)."""
    records = read_labels(lines)
    for _ in range(count):
        chosen = rng.choice(len(records), size=min(len(records), CROPS_PER_PAGE), replace=False)
        yield compose_page((Image.open(records[i].path).convert("L") for i in chosen), rng, letterheads=letterheads)


def compose_folder(lines: str | Path, pages: int, output: str | Path, seed: int = 0) -> list[Path]:
    """``pages`` pages composed from the line images of the labels.tsv folder ``lines``, written to ``output``
    as ``synthetic-NNNN.jpg`` (RGB pages) or ``.png`` (grey) with ``synthetic-NNNN.xml`` beside each."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    written = []
    composed = composed_pages(lines, pages, np.random.default_rng(seed))
    for number, page in enumerate(tqdm(composed, total=pages, desc="composing pages", unit="page")):
        suffix = ".jpg" if page.image.mode == "RGB" else ".png"
        image = output / f"synthetic-{number:04d}{suffix}"
        page.image.save(image, quality=90) if suffix == ".jpg" else page.image.save(image)
        result = PageResult(image.name, page.image.width, page.image.height,
                            tuple(PageLine(f"l{i}", line.polygon, line.baseline, PLACEHOLDER, 1.0)
                                  for i, line in enumerate(page.lines)))
        target = image.with_suffix(".xml")
        target.write_bytes(page_xml(result))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", required=True, help="a labels.tsv folder of line images (dark ink on light)")
    parser.add_argument("--pages", type=int, default=50, help="how many pages")
    parser.add_argument("--output", required=True, help="the folder to write (created)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.pages < 1:
        parser.error(f"--pages must be at least 1, got {args.pages}")
    written = compose_folder(args.lines, args.pages, args.output, args.seed)
    print(f"wrote {len(written)} pages to {args.output}")


if __name__ == "__main__":
    main()
