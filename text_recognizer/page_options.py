"""The page reader's limits and the flags that set them (``--segmenter``, ``--min-line-confidence``), shared by the
CLI, the batch command and the page evaluation.

Why a module of its own: the batch command's driver parses these flags without importing the reader, which needs torch
and the segmenter.
"""

from __future__ import annotations

#: Pages with more pixels than this are refused (``PageReader(max_pixels=...)`` changes it).
MAX_PAGE_PIXELS = 50_000_000
#: Found lines read with a lower confidence are left out of the page (and counted in ``PageResult.dropped``).
#: Why: what a segmenter takes for a line on textured paper, bleed-through or a stamp reads as a few letters
#: of garbage at a confidence that real lines rarely have. Chosen on Copiste val (47 pages, bundled segmenter
#: and model, greedy): at 0.2 no matched line is lost and 5 of the 18 false lines go; at 0.4 a matched one goes.
#: ``PageReader(min_confidence=0)`` (CLI ``--min-line-confidence 0``) keeps every line.
MIN_LINE_CONFIDENCE = 0.2


def add_page_reader_arguments(parser, prefix: str = "") -> None:
    """``--segmenter`` and ``--min-line-confidence`` on ``parser`` (or an argument group), their help starting with
    ``prefix`` (e.g. ``"with --page: "``): the CLI and the page evaluation name them the same way."""
    parser.add_argument("--segmenter", default=None,
                        help=f"{prefix}how lines are found: learned (the bundled network, the default), classical "
                             "(no weights), or a segmenter weights file (training/segmenter/train.py's best.pt)")
    parser.add_argument("--min-line-confidence", type=float, default=MIN_LINE_CONFIDENCE,
                        help=f"{prefix}found lines read with a lower confidence are left out (marks, not writing); "
                             "0 keeps every line")
