"""Build a model's language models from text: the character n-gram LM of the beam search and the word
LM that re-scores its readings, packed into a decoder bundle (``text_recognizer.decoding.bundle``).

Why characters: handwriting is full of words no lexicon holds (names, misspellings, hyphenated
halves), and a character model scores them all, while still knowing spelling and which words follow
which over its 6-character window (KenLM in flashlight-text supports orders <= 6). Spaces are the
token ``|`` (ARPA tokens cannot be blank). The same text also makes a small word n-gram model
(``word_lm.py``) that re-scores the readings left in the beam and proposes lexicon corrections:
characters steer the search, words pick the winner.

Text sources: a ``.txt`` file is one line of text per line; a folder (or a ``labels.tsv``) is a
dataset folder whose IAM-tokenised labels are turned into natural spacing (``detokenize``), the
spacing the recognizer outputs. Never build it from validation or test text. The command line is
``python -m training.decoder.build_lm``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from text_recognizer.codec import Codec
from text_recognizer.data.folder import read_labels
from text_recognizer.data.tokenization import detokenize
from text_recognizer.decoding.bundle import (
    DEFAULT_LANGUAGE,
    SPACE_TOKEN,
    make_bundle,
    space_token_for,
    word_lm_entry,
)
from text_recognizer.decoding.language import check_language, described, missing_letters
from text_recognizer.decoding.ngram import estimate_kneser_ney, format_arpa
from text_recognizer.decoding.word_lm import DEFAULT_MIN_COUNT, DEFAULT_WORD_ORDER, build_word_arpa, read_lexicon

#: KenLM inside flashlight-text is compiled for orders up to 6.
MAX_ORDER = 6


def read_texts(sources: Sequence[str | Path]) -> list[str]:
    """Lines of text from ``.txt`` files and dataset folders (labels detokenised to natural spacing)."""
    if isinstance(sources, (str, Path)) or not sources:
        raise ValueError(f"sources must be a non-empty list of files or folders, got {sources!r}")
    lines: list[str] = []
    for source in map(Path, sources):
        if source.is_dir() or source.name == "labels.tsv":
            folder = source if source.is_dir() else source.parent
            lines.extend(detokenize(record.text) for record in read_labels(folder))
        elif source.is_file():
            text = source.read_text(encoding="utf-8")
            lines.extend(line.strip() for line in text.splitlines())
        else:
            raise ValueError(f"text source {source} is neither a file nor a folder")
    lines = [" ".join(line.split()) for line in lines]
    return [line for line in lines if line]


def char_tokens(text: str, space: str = SPACE_TOKEN) -> list[str]:
    """One LM token per character, spaces as ``space`` (``bundle.space_token_for`` the model's alphabet)."""
    return [space if c == " " else c for c in text]


def build_arpa(lines: Iterable[str], codec: Codec, order: int = MAX_ORDER) -> str:
    """Estimate a character n-gram model (interpolated Kneser-Ney) and return its ARPA text.

    Lines with characters outside ``codec`` are dropped (they could never be decoded anyway).
    """
    if not isinstance(order, int) or isinstance(order, bool) or not 1 <= order <= MAX_ORDER:
        raise ValueError(f"order must be an integer in [1, {MAX_ORDER}] (KenLM's limit), got {order!r}")
    space = space_token_for(codec.charset)
    sentences = [char_tokens(line, space) for line in lines if line and not codec.unknown_characters(line)]
    if not sentences:
        raise ValueError("no usable text: every line was empty or had characters outside the model's charset")
    return format_arpa(estimate_kneser_ney(sentences, order))


@dataclass(frozen=True)
class LanguageModelSpec:
    """What to build: the character LM's ``order``, the word LM's ``word_order`` (0: none) and pruning
    ``word_min_count``, and word lists whose words the word LM treats as known (``lexicon``)."""

    order: int = MAX_ORDER
    word_order: int = DEFAULT_WORD_ORDER
    word_min_count: int = DEFAULT_MIN_COUNT
    lexicon: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.word_order, int) or self.word_order < 0:
            raise ValueError(f"word_order must be an integer >= 0, got {self.word_order!r}")
        if self.lexicon and not self.word_order:
            raise ValueError("a lexicon belongs to the word LM: it needs word_order >= 1")


def build_decoder_bundle(lines: Sequence[str], codec: Codec, spec: LanguageModelSpec, source: str,
                         previous: dict | None = None, language: str = DEFAULT_LANGUAGE) -> tuple[dict, str]:
    """A decoder bundle with LMs built from ``lines`` for ``codec``, and the character LM's ARPA text.

    ``previous`` (a bundle already beside the model) keeps its tuned beam settings and calibration.
    ``language`` is the ISO 639-1 code of the text (``"fr"``); a model whose alphabet lacks its letters is
    refused (its LMs would have lost every line with them, and the model could not write them anyway). Save
    the bundle of a further language as ``bundle_path(checkpoint, language)`` (``best.fr.decoder.pt``).
    """
    lacking = missing_letters(check_language(language), codec.charset)
    if lacking:
        raise ValueError(f"the model's alphabet cannot write {described(language)}: it lacks {lacking!r}; "
                         "train or fine-tune a model with them first")
    arpa = build_arpa(lines, codec, spec.order)
    word_lm = None
    if spec.word_order:
        word_arpa = build_word_arpa(lines, spec.word_order, spec.word_min_count)
        lexicon = read_lexicon(spec.lexicon) if spec.lexicon else None
        word_lm = word_lm_entry(word_arpa, spec.word_order, spec.word_min_count, source, lexicon,
                                ", ".join(map(str, spec.lexicon)))
    previous = previous or {}
    bundle = make_bundle(arpa, codec, spec.order, source=source, beam=previous.get("beam"),
                         calibration=previous.get("calibration"), word_lm=word_lm, language=language)
    return bundle, arpa
