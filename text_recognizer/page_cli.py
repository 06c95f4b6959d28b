"""``--page`` on the command line: read page images and PDFs, print the pages (json, jsonl, text) or write them
(PAGE-XML or ALTO per page, a searchable PDF or hOCR per input file).

Why a module of its own: the line CLI (``text_recognizer.recognizer``) stays about lines; this one knows pages,
PDFs and their output files. A page that cannot be read is an ``error:`` on stderr and the others go on; a line that
cannot be cut or read is a ``warning:`` (it is reported in its line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from text_recognizer.page_files import FILE_FORMATS, ReadPage, output_target, read_page_file, target_problem
from text_recognizer.page_formats import XML_FORMATS, render, write_xml
from text_recognizer.progress import PROGRESS_THRESHOLD, progress_bar


def _reader(recognizer, args: argparse.Namespace, files: list[Path]):
    """The ``PageReader`` the arguments ask for; ``ImportError``/``FileNotFoundError``/``ValueError`` if it cannot
    be made (no segmenter, no lxml for the XML formats, no pypdfium2 for PDFs out)."""
    from text_recognizer.page_formats import lxml_etree
    from text_recognizer.page_reader import PageReader
    from text_recognizer.pdf import is_pdf, pdfium
    from text_recognizer.segmentation.choose import load_segmenter

    options = {} if args.min_line_confidence is None else {"min_confidence": args.min_line_confidence}
    reader = PageReader(recognizer, segmenter=load_segmenter(args.segmenter), max_pixels=args.max_page_pixels,
                        **options)
    if args.format in (*XML_FORMATS, "hocr"):
        lxml_etree()  # lxml is there, before any page is read
    if args.format == "pdf" or any(is_pdf(path) for path in files):
        pdfium()  # pypdfium2 is there (the pdf extra), before any page is read
    return reader


class _Printer:
    """Prints pages as they are read (jsonl, text) or at the end (json), or writes their per-page XML files."""

    def __init__(self, fmt: str, output_dir: Path | None, several: bool):
        self.fmt, self.output_dir, self.several = fmt, output_dir, several
        self.collected: list[dict] = []
        self.printed = 0

    def page(self, page: ReadPage) -> None:
        result = page.result
        if self.fmt == "json":
            self.collected.append(result.to_dict())
        elif self.fmt == "jsonl":
            print(render(result, "jsonl"), flush=True)
        elif self.fmt == "text":
            if self.several:
                print(f"==> {page.label} <==" if self.printed == 0 else f"\n==> {page.label} <==")
            print(result.text, flush=True)
        elif self.fmt in XML_FORMATS:
            target = write_xml(result, self.fmt, output_target(page.path, self.fmt, self.output_dir, page.number))
            print(f"{page.label} -> {target} ({len(result.lines)} lines)", flush=True)
        self.printed += 1

    def close(self) -> None:
        if self.fmt == "json":
            print(json.dumps(self.collected, indent=2, ensure_ascii=False))


def read_pages(recognizer, files: list[Path], args: argparse.Namespace) -> int:
    """Read every page of ``files``; returns 0 when every page was read, 1 when some were not, 2 when pages cannot
    be read at all (no segmenter, a missing package)."""
    from text_recognizer.pdf.pages import PdfError

    fmt = "json" if args.json else args.format
    args.format = fmt
    try:
        reader = _reader(recognizer, args, files)
    except (ImportError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    several = len(files) > 1 or any(file.suffix.lower() == ".pdf" for file in files)
    printer = _Printer(fmt, args.output_dir, several)
    failed = read = 0
    show = args.progress == "always" or (args.progress == "auto" and len(files) > PROGRESS_THRESHOLD)
    with progress_bar(len(files), show, unit="file") as bar:
        for index, path in enumerate(files):
            problem = target_problem(files, index, fmt, args.output_dir) if args.output_dir is not None and \
                fmt in (*XML_FORMATS, *FILE_FORMATS) else None
            try:
                if problem is not None:
                    raise PdfError(f"{path}: {problem}")
                pages = list(read_page_file(reader, path, {}, args.dpi, args.max_pdf_pages))
            except PdfError as error:
                bar.write(f"error: {error}", file=sys.stderr)
                failed += 1
                bar.update()
                continue
            for page in pages:
                if page.error is not None:
                    bar.write(f"error: {page.error}", file=sys.stderr)
                    failed += 1
                    continue
                for line in page.result.lines:
                    if line.error is not None:
                        bar.write(f"warning: {page.label}#{line.id}: {line.error}", file=sys.stderr)
                printer.page(page)
                read += 1
            if fmt in FILE_FORMATS and any(page.result is not None for page in pages):
                target = output_target(path, fmt, args.output_dir)
                _write_file(pages, fmt, target, bar)
            bar.update()
    printer.close()
    if failed:
        print(f"{failed} page(s) could not be read; {read} of {read + failed} were", file=sys.stderr)
    return 1 if failed else 0


def _write_file(pages: list[ReadPage], fmt: str, target: Path, bar) -> None:
    from text_recognizer.page_files import write_file_output

    written = write_file_output(pages, fmt, target)
    lines = sum(len(page.result.lines) for page in pages if page.result is not None)
    print(f"{pages[0].path} -> {written} ({len(pages)} page{'s' if len(pages) != 1 else ''}, {lines} lines)",
          flush=True)
