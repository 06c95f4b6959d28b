"""Build a model's language models from text and store them in its decoder bundle.

    python -m training.decoder.build_lm --checkpoint best.pt [--order 6] [--lexicon WORDS] [--language fr] \\
        TEXT_OR_FOLDER...

The character LM steers the beam search, the word LM re-scores its readings
(``text_recognizer.decoding.lm_builder``); the bundle goes next to the checkpoint
(``best.pt`` -> ``best.decoder.pt``; ``--language fr``: ``best.fr.decoder.pt``, the bundle of a further
language, docs/decoding.md "Languages"), keeping the beam settings and calibration of a bundle of the same
language already there. ``--running-text`` books and speeches are cut into line-sized pieces
(``text_recognizer.data.running_text``). Never build it from validation or test text.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from text_recognizer.checkpoint import CheckpointError, load_checkpoint
from text_recognizer.data.running_text import read_running_text
from text_recognizer.decoding.bundle import (
    DEFAULT_LANGUAGE,
    bundle_language,
    bundle_path,
    lexicon_words,
    load_bundle,
    save_bundle,
)
from text_recognizer.decoding.lm_builder import MAX_ORDER, LanguageModelSpec, build_decoder_bundle, read_texts
from text_recognizer.decoding.word_lm import DEFAULT_MIN_COUNT, DEFAULT_WORD_ORDER
from text_recognizer.recognizer import default_checkpoint

#: The default training text of the bundled model's LM (IAM train + train_extra, never val), in the
#: development data folder next to the repository (``../shared/data``).
_SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "iam"
DEFAULT_TEXT = (_SHARED / "train", _SHARED / "train_extra")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.decoder.build_lm",
        description="Build a character n-gram language model (and a word LM) from text and store them with a "
                    "checkpoint.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("texts", nargs="*", type=Path, default=list(DEFAULT_TEXT),
                        help=".txt files (one line each) or dataset folders (labels.tsv, detokenised); "
                             "default: IAM train + train_extra. Never validation or test text")
    parser.add_argument("--running-text", nargs="+", type=Path, default=[], metavar="TXT_OR_FOLDER",
                        help="also running text (books, speeches: .txt files or folders of them), cut into "
                             "pieces the length of a written line (text_recognizer/data/running_text.py)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the piece lengths of --running-text")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="model whose alphabet the LM uses; the bundle goes next to it "
                             "(default: the bundled model)")
    parser.add_argument("--order", type=int, default=MAX_ORDER, help=f"n-gram order, 1..{MAX_ORDER}")
    parser.add_argument("--word-order", type=int, default=DEFAULT_WORD_ORDER,
                        help="order of the word LM that re-scores the beam's readings (word_lm.py); 0: none")
    parser.add_argument("--word-min-count", type=int, default=DEFAULT_MIN_COUNT,
                        help="word n-grams (above single words) seen fewer times are pruned")
    parser.add_argument("--lexicon", nargs="+", type=Path, default=[], metavar="WORD_LIST",
                        help="word lists (first field of each line: a pronouncing dictionary works) whose words "
                             "the word LM's re-scoring treats as known (and offers as corrections)")
    parser.add_argument("--language", default=DEFAULT_LANGUAGE,
                        help="ISO 639-1 code of the text (en, fr), stamped in the bundle; other than en, the bundle "
                             "goes to <checkpoint>.<language>.decoder.pt (unless --out)")
    parser.add_argument("--out", type=Path, default=None,
                        help="bundle path (default: <checkpoint>.decoder.pt, or <checkpoint>.<language>.decoder.pt "
                             "for a --language other than en)")
    parser.add_argument("--arpa", type=Path, default=None, help="also write the plain ARPA file here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 on success, 2 with a message on a bad checkpoint, text source or setting."""
    args = build_parser().parse_args(argv)
    try:
        spec = LanguageModelSpec(args.order, args.word_order, args.word_min_count, tuple(args.lexicon))
        checkpoint = args.checkpoint or default_checkpoint()
        codec = load_checkpoint(checkpoint).codec
        lines = read_texts(args.texts)
        if args.running_text:
            lines += read_running_text(args.running_text, seed=args.seed)
        source = ", ".join(map(str, [*args.texts, *args.running_text]))
        language = args.language
        out = args.out or bundle_path(checkpoint, None if language == DEFAULT_LANGUAGE else language)
        previous = load_bundle(out, codec) if out.is_file() else None
        if previous is not None and bundle_language(previous) != language:
            previous = None  # another language's settings: tuned for other LMs
        bundle, arpa = build_decoder_bundle(lines, codec, spec, source, previous, language)
        save_bundle(bundle, out)
        if args.arpa:
            args.arpa.write_text(arpa, encoding="utf-8")
    except (CheckpointError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    word_lm = bundle["word_lm"]
    words = f", order-{args.word_order} word LM ({len(word_lm['arpa_gz']) / 2**20:.1f} MiB)" if word_lm else ""
    if word_lm and "lexicon_gz" in word_lm:
        words += (f" and a lexicon of {len(lexicon_words(bundle))} words "
                  f"({len(word_lm['lexicon_gz']) / 2**20:.1f} MiB)")
    size = len(bundle["lm"]["arpa_gz"]) / 2**20
    print(f"{len(lines)} lines -> order-{args.order} {bundle['language']} character LM ({size:.1f} MiB gzipped)"
          f"{words} in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
