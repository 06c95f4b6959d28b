"""Running text (books, speeches) cut into pieces shaped like handwritten lines, for the language model and font lines.

Why: the character LM wraps every line of its training text in ``<s> ... </s>``, and the decoder
scores a handwritten line the same way, so the text should come in pieces the length of a written
line (25-60 characters, cut at spaces) that start and stop mid-sentence, as lines on a page do, not
as whole paragraphs. A printed book also spells quotes, dashes and ellipses typographically, while
handwriting alphabets (IAM's among them) have only the plain ASCII forms: ``build_arpa`` drops every
line with a character the model cannot write, so those are mapped to their plain forms first.

Measured (``benchmarks/RESULTS.md``, "A bigger language model"): adding 12.9 M characters of public
domain running text to IAM's 0.4 M moved beam-search CER on IAM val from 4.81% to 4.26%.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

#: Typographic characters that print often and write plainly.
PLAIN_FORMS = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
    "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u2026": "...", "\u00a0": " ",
}
#: Default piece length, in characters (IAM's lines are mostly 25-60 characters long).
MIN_CHARS, MAX_CHARS = 25, 60


def plain_typography(text: str) -> str:
    """``text`` in NFC with curly quotes, long dashes, ellipses and no-break spaces in their plain forms."""
    text = unicodedata.normalize("NFC", text)
    return "".join(PLAIN_FORMS.get(ch, ch) for ch in text)


def line_sized_pieces(text: str, rng: random.Random, min_chars: int = MIN_CHARS,
                      max_chars: int = MAX_CHARS) -> Iterator[str]:
    """Cut ``text`` at spaces into pieces of about ``min_chars..max_chars`` characters, in order.

    Each piece takes whole words until it reaches a length drawn uniformly from the range, so a
    piece is longer than ``max_chars`` only when its last word is; the last piece may be shorter.
    No word is split, dropped or reordered: joining the pieces with spaces gives the text back with
    its whitespace collapsed.
    """
    if not 1 <= min_chars <= max_chars:
        raise ValueError(f"need 1 <= min_chars <= max_chars, got {min_chars} and {max_chars}")
    words: list[str] = []
    length, target = -1, rng.randint(min_chars, max_chars)
    for word in text.split():
        words.append(word)
        length += len(word) + 1
        if length >= target:
            yield " ".join(words)
            words, length, target = [], -1, rng.randint(min_chars, max_chars)
    if words:
        yield " ".join(words)


def running_text_files(sources: Sequence[str | Path]) -> list[Path]:
    """The ``.txt`` files named in ``sources``, folders expanded to their ``*.txt`` files in name order."""
    files: list[Path] = []
    for source in map(Path, sources):
        if source.is_dir():
            found = sorted(source.glob("*.txt"))
            if not found:
                raise ValueError(f"running-text folder {source} has no .txt files")
            files.extend(found)
        elif source.is_file():
            files.append(source)
        else:
            raise ValueError(f"running-text source {source} is neither a file nor a folder")
    return files


def read_running_text(sources: Sequence[str | Path], seed: int = 0, min_chars: int = MIN_CHARS,
                      max_chars: int = MAX_CHARS) -> list[str]:
    """Line-sized pieces of every file in ``sources`` (see ``line_sized_pieces``), the same for the same seed."""
    if isinstance(sources, (str, Path)) or not sources:
        raise ValueError(f"sources must be a non-empty list of files or folders, got {sources!r}")
    rng = random.Random(seed)
    pieces: list[str] = []
    for path in running_text_files(sources):
        text = plain_typography(path.read_text(encoding="utf-8"))
        pieces.extend(line_sized_pieces(text, rng, min_chars, max_chars))
    return pieces
