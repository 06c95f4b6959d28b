"""``text-recognizer-batch``: transcribe a collection of page images and PDFs on Ray (this machine by default, or a
cluster with ``--address``), one result per page, resumable.

    text-recognizer-batch scans/ --output out/                       # JSON per page, manifest.jsonl
    text-recognizer-batch scans/ --output out/ --format json,alto,pdf  # and ALTO per page, a searchable PDF per file
    text-recognizer-batch --list pages.txt --output out/ --address auto   # an existing Ray cluster

Exit status: 0 when every page is done, 1 when some failed (they are in the manifest; run again to retry them), 2
for a usage error or a setup that cannot read pages.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from text_recognizer.archive.tasks import BATCH_FORMATS


def _formats(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [fmt for fmt in chosen if fmt not in BATCH_FORMATS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown format(s) {', '.join(unknown)}; choose from "
                                         f"{', '.join(BATCH_FORMATS)}")
    return tuple(dict.fromkeys(("json", *chosen)))


def build_parser() -> argparse.ArgumentParser:
    from text_recognizer.cli_types import positive_float, positive_int
    from text_recognizer.decoding.options import add_decoder_arguments
    from text_recognizer.page_options import MAX_PAGE_PIXELS, add_page_reader_arguments

    parser = argparse.ArgumentParser(prog="text-recognizer-batch", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("inputs", nargs="*", metavar="INPUT",
                        help="page images and PDFs: files, folders (with their subfolders) or quoted glob patterns")
    parser.add_argument("--list", type=Path, action="append", default=[], metavar="FILE",
                        help="a file naming one input per line (relative to the file); may be repeated")
    parser.add_argument("--output", type=Path, required=True, help="the output folder (json/, page/, alto/, pdf/, "
                        "hocr/ and manifest.jsonl); a second run into it does only what is missing or failed")
    parser.add_argument("--format", type=_formats, default=("json",),
                        help=f"comma-separated, from {', '.join(BATCH_FORMATS)} (json is always written)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="model actors (default: one per CPU, each with one torch thread)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch threads per actor")
    parser.add_argument("--address", default=None,
                        help="an existing Ray cluster ('auto' or ray://host:10001); default: start Ray here")
    parser.add_argument("--executor", choices=("ray", "local"), default="ray",
                        help="local: read in this process, without Ray (the same outputs and manifest)")
    parser.add_argument("--checkpoint", type=Path, default=None, help="model checkpoint (default: the bundled one)")
    parser.add_argument("--device", default="cpu", help="torch device of each actor's model (e.g. cuda)")
    parser.add_argument("--gpus-per-worker", type=positive_float, default=None,
                        help="GPUs Ray reserves for each actor (with --device cuda on a cluster with GPUs)")
    parser.add_argument("--dpi", type=positive_float, default=None,
                        help="PDF pages' resolution (default: each page's scan resolution, else 300)")
    parser.add_argument("--max-page-pixels", type=positive_int, default=MAX_PAGE_PIXELS)
    add_page_reader_arguments(parser)
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help="a progress bar in pages (pages/s, time left); auto: when stderr is a terminal")
    add_decoder_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from text_recognizer.archive.run import BatchSettings, run_batch
    from text_recognizer.archive.tasks import plan
    from text_recognizer.decoding.options import decoder_kwargs

    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.inputs and not args.list:
        parser.error("give page images, PDFs or folders of them (or --list FILE)")
    if args.executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            print("error: --executor ray needs Ray: pip install 'text-recognizer[batch]' (or --executor local)",
                  file=sys.stderr)
            return 2
    try:
        tasks, resolved = plan(args.inputs, args.list)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for item, reason in resolved.problems:
        print(f"error: {item}: {reason}", file=sys.stderr)
    if not tasks:
        print("error: no page images or PDFs found", file=sys.stderr)
        return 2
    recognizer = {"checkpoint": args.checkpoint, "device": args.device, **decoder_kwargs(args)}
    settings = BatchSettings(args.output, args.format, recognizer, args.segmenter, args.dpi, args.max_page_pixels,
                             args.min_line_confidence, args.workers, args.threads, args.address, args.executor,
                             args.gpus_per_worker)
    show = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
    try:
        summary = run_batch(tasks, settings, progress=show)
    except (ImportError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{summary.pages} pages: {summary.done_before} done before, {summary.read} read now, {summary.failed} "
          f"failed ({summary.seconds:.1f} s); manifest: {args.output / 'manifest.jsonl'}")
    return 1 if summary.failed or resolved.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
