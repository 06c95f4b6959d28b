"""Write the running text that ``--font-text`` draws lines from: a folder's labels, or a slice of a book.

Why: font-drawn lines teach letters the real lines hold too rarely (the accents of French in script faces), and
what they say should be the language being learned. The bundled model's French stage (training/recipes/bundled.yaml,
``font-text``) drew its font lines from two texts of about the same size, so each language gets half of them:

    python -m training.sources.font_text fr.txt --labels cop40/train                     # the training labels, one text
    python -m training.sources.font_text en.txt --book moby-dick/data.txt --start 300000 --chars 207000

Labels holding ``#`` (a crossed-out word) are left out; whitespace is collapsed to single spaces. A book slice
starts after the first space at or after ``--start``, so no word is cut there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text_recognizer.data.folder import read_labels


def labels_text(folders: list[Path]) -> str:
    """Every label of ``folders`` (``labels.tsv``) without a crossed-out mark, joined by spaces."""
    return " ".join(r.text for folder in folders for r in read_labels(folder) if "#" not in r.text and r.text.strip())


def book_slice(path: Path, start: int, chars: int) -> str:
    """Characters ``start`` to ``start + chars`` of ``path`` (whitespace collapsed; ``chars`` 0: to the end), less
    the partial word before the first space when ``start`` is not 0."""
    text = " ".join(path.read_text(encoding="utf-8").split())
    text = text[start:start + chars] if chars else text[start:]
    if start:
        text = text[text.find(" ") + 1:] if " " in text else ""
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the .txt file to write")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labels", type=Path, nargs="+", help="line folders whose labels make the text")
    source.add_argument("--book", type=Path, help="a plain-text book to take a slice of")
    parser.add_argument("--start", type=int, default=0, help="with --book: where the slice starts (characters)")
    parser.add_argument("--chars", type=int, default=0, help="with --book: how many characters (0: to the end)")
    args = parser.parse_args(argv)
    text = labels_text(args.labels) if args.labels else book_slice(args.book, args.start, args.chars)
    if not text:
        parser.error("the text came out empty")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"{len(text):,} characters -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
