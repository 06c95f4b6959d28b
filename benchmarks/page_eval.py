"""Page reading on real pages: line detection (precision, recall, F1 at polygon IoU >= 0.5), page CER, the CER of
the same lines cut by their true polygons, their ratio, and seconds per page.

    PYTHONPATH=. python benchmarks/page_eval.py [--pages ../shared/data/stanford_memorials_1905_pages] [--json]
    PYTHONPATH=. python benchmarks/page_eval.py --pages ../shared/data/copiste_dun_jour/val --found kraken_xml/

The scoring is ``training/segmenter/page_evaluation.py``'s (``training/evaluate.py --pages`` runs the same): found lines
are matched one-to-one to every true line; only handwritten true lines with text count (the Stanford pages'
line types); a found line matched to a printed, typed or signature line is neither right nor wrong; an
unmatched found line lying mostly outside every text block is ignored (the Copiste pages' printed notice).
``--found DIR`` scores (and reads) another segmenter's lines, ``DIR/<page>.xml`` in PAGE or ALTO, instead of
running the classical segmenter. Lines are read by the bundled model (or ``--checkpoint``), greedy by default.

Seconds per page: segmentation alone (the image already decoded) and end to end (decode, segment, cut, read);
a measurement only when nothing else runs on the machine, upper bounds otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text_recognizer.decoding.options import add_decoder_arguments, decoder_kwargs
from training.segmenter.page_evaluation import add_page_arguments, run_and_print

DEFAULT_PAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "stanford_memorials_1905_pages"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--pages", type=Path, default=DEFAULT_PAGES, help="folder of ALTO/PAGE files + images")
    parser.add_argument("--checkpoint", type=Path, default=None, help="model checkpoint (default: the bundled model)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    add_page_arguments(parser)
    add_decoder_arguments(parser)
    args = parser.parse_args(argv)

    def recognizer():
        from text_recognizer.recognizer import LineRecognizer

        return LineRecognizer(args.checkpoint, **decoder_kwargs(args))

    return run_and_print(args, recognizer, args.pages)

if __name__ == "__main__":
    raise SystemExit(main())
