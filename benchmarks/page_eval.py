"""Line detection on real pages: precision, recall and F1 at polygon IoU >= 0.5, and seconds per page.

    PYTHONPATH=. python benchmarks/page_eval.py [--pages ../shared/data/stanford_memorials_1905_pages] [--json]

Scoring follows the Stanford pages' README: found lines are matched one-to-one to *all* true lines
(``text_recognizer.segmentation.scoring``), but only handwritten true lines count (ALTO ``TAGREFS`` to a
``...:Handwritten`` tag; files without line types count every line); a found line matched to a printed,
typed or signature line is neither right nor wrong. Segmentation time is per page, the image already
decoded; run it alone on the machine. Page CER (lines read through found vs true polygons) is still to come.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from lxml import etree
from PIL import Image

from text_recognizer.data.layout import read_layout
from text_recognizer.segmentation.classical import segment_page
from text_recognizer.segmentation.scoring import detection_scores, match_lines

DEFAULT_PAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "stanford_memorials_1905_pages"


def handwritten(layout) -> list[bool]:
    """Per line: is it handwritten? (ALTO line types; ``True`` for every line of a file without them)."""
    root = layout.tree.getroot()
    namespace = etree.QName(root).namespace
    labels = {tag.get("ID"): tag.get("LABEL") or "" for tag in root.iter(f"{{{namespace}}}OtherTag")}
    if not labels:
        return [True] * len(layout.lines)
    return [labels.get(line.element.get("TAGREFS"), "").endswith("Handwritten") for line in layout.lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=Path, default=DEFAULT_PAGES, help="folder of ALTO/PAGE files + images")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    true_positives = found_count = true_count = 0
    seconds = []
    rows = []
    for xml in sorted(args.pages.glob("*.xml")):
        layout = read_layout(xml)
        hand = handwritten(layout)
        image = Image.open(layout.find_image())
        image.load()
        start = time.perf_counter()
        found = segment_page(image)
        seconds.append(time.perf_counter() - start)
        matching = match_lines([line.polygon for line in found], [line.polygon for line in layout.lines], image.size)
        hits = sum(hand[t] for _, t, _ in matching.pairs)
        neutral = len(matching.pairs) - hits
        true_positives, found_count, true_count = true_positives + hits, found_count + len(found) - neutral, \
            true_count + sum(hand)
        rows.append((xml.stem, len(found) - neutral, sum(hand), hits, seconds[-1]))
    result = {**detection_scores(true_positives, found_count, true_count), "pages": len(rows),
              "seconds_per_page": sum(seconds) / max(1, len(seconds)), "segmenter": "classical"}
    if args.json:
        print(json.dumps(result))
        return
    print("page\tfound\ttrue\tmatched\tseconds")
    for row in rows:
        print(f"{row[0]}\t{row[1]}\t{row[2]}\t{row[3]}\t{row[4]:.2f}")
    print(f"precision {result['precision']:.3f}  recall {result['recall']:.3f}  F1 {result['f1']:.3f}  "
          f"{result['seconds_per_page']:.2f} s/page over {result['pages']} pages")


if __name__ == "__main__":
    main()
