"""A word n-gram language model that re-scores the beam's finished hypotheses (``rescoring.py``).

Why a second LM: the character LM steers the search over a 6-character window, so it knows
spelling but not which *words* exist or follow one another. After the search, the beam holds
about 20 distinct readings of a line; the best of them is often a real phrase the search ranked
second (``benchmarks/RESULTS.md``, "Word language model"). Re-ranking them with a word model is
cheap (a few dictionary lookups per hypothesis) and leaves the search itself unchanged.

Words are what ``tokenize_like_iam`` makes of a line (punctuation and clitics split off),
lower-cased: capitals are the character LM's business, and a capitalised first word is the same word.
A word the model never saw is scored as ``<unk>``; the re-scoring also counts unknown words
(``BeamOptions.oov_penalty``) so that names are allowed but not preferred to real words. What is
"known" can be widened with a lexicon (``read_lexicon``: a pronouncing dictionary's 116,000 words
and names, say), so that a real surname the texts never mention is not taken for a misreading.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from text_recognizer.data.tokenization import tokenize_like_iam
from text_recognizer.decoding.kenlm import load_kenlm
from text_recognizer.decoding.ngram import EOS, UNK, estimate_kneser_ney, format_arpa

#: Bigrams: a trigram model from the same text re-ranked no better (RESULTS) and is 2.5x larger.
DEFAULT_WORD_ORDER = 2
#: Word pairs seen once are dropped: the model shrinks 2.6x (to 1.6 MiB gzipped) and re-ranks as well.
DEFAULT_MIN_COUNT = 2


def words(text: str) -> list[str]:
    """The word-LM tokens of one line: IAM-style tokens, lower-cased."""
    return tokenize_like_iam(text).lower().split()


def build_word_arpa(lines: Iterable[str], order: int = DEFAULT_WORD_ORDER, min_count: int = DEFAULT_MIN_COUNT) -> str:
    """Estimate a word n-gram model (interpolated Kneser-Ney, pruned) and return its ARPA text."""
    sentences = [tokens for tokens in map(words, lines) if tokens]
    if not sentences:
        raise ValueError("no usable text for the word language model: every line was empty")
    return format_arpa(estimate_kneser_ney(sentences, order, min_count))


def read_lexicon(paths: Sequence[str | Path]) -> list[str]:
    """Known words from word-list files: the first field of each line, lower-cased, a trailing
    variant mark such as ``(2)`` dropped (pronouncing dictionaries list a word once per reading),
    ``;;;`` comment lines skipped; only words of letters are kept. Sorted, without repeats."""
    if isinstance(paths, (str, Path)) or not paths:
        raise ValueError(f"paths must be a non-empty list of word-list files, got {paths!r}")
    known: set[str] = set()
    for path in map(Path, paths):
        if not path.is_file():
            raise ValueError(f"lexicon {path} is not a file")
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            fields = line.split()
            if not fields or fields[0].startswith(";;;"):
                continue
            word = _VARIANT.sub("", fields[0]).lower()
            if word.isalpha():
                known.add(word)
    if not known:
        raise ValueError(f"no words in the lexicon files {[str(p) for p in paths]}")
    return sorted(known)


_VARIANT = re.compile(r"\(\d+\)$")


def arpa_unigrams(arpa: str) -> dict[str, float]:
    """The unigrams of an ARPA text and their log10 probabilities, in file order (``<s>``, ``</s>``
    and ``<unk>`` included)."""
    unigrams, inside = {}, False
    for line in arpa.splitlines():
        if line.startswith("\\1-grams:"):
            inside = True
        elif inside and line.startswith("\\"):
            break
        elif inside and line.strip():
            fields = line.split("\t")
            unigrams[fields[1]] = float(fields[0])
    if not unigrams:
        raise ValueError("the word language model has no unigrams (not an ARPA text?)")
    return unigrams


def arpa_vocabulary(arpa: str) -> list[str]:
    """The unigrams of an ARPA text, in file order."""
    return list(arpa_unigrams(arpa))


class WordLanguageModel:
    """Scores whole lines with a word ARPA model through KenLM (inside flashlight-text).

    ``score(text)`` -> ``(log p, unknown words, words)``, ``log p`` in natural-log units (the beam's
    scores are natural logs), sentence start and end included. Unknown words: words of letters that
    are neither in the model nor in ``lexicon`` (numbers and punctuation are never unknown).
    """

    def __init__(self, arpa: str, lexicon: Iterable[str] = ()):
        from flashlight.lib.text.decoder.kenlm import KenLM
        from flashlight.lib.text.dictionary import Dictionary

        self.unigram_log10 = arpa_unigrams(arpa)
        vocabulary = list(self.unigram_log10)
        self._index = {word: i for i, word in enumerate(vocabulary)}
        self._unk = self._index.get(UNK)
        if self._unk is None:
            raise ValueError("the word language model has no <unk> entry")
        self._known = (set(vocabulary) | set(lexicon)) - {UNK}
        self._lm = load_kenlm(KenLM, arpa, Dictionary(vocabulary))

    def score(self, text: str) -> tuple[float, int, int]:
        tokens = words(text)
        state = self._lm.start(False)
        total = 0.0
        for token in [*tokens, EOS]:
            state, logp = self._lm.score(state, self._index.get(token, self._unk))
            total += logp
        unknown = sum(token.isalpha() and token not in self._known for token in tokens)
        return total * math.log(10), unknown, len(tokens)

    @property
    def known_words(self) -> frozenset[str]:
        """Every word the model or the lexicon holds (lower case)."""
        return frozenset(self._known)

    def is_known(self, word: str) -> bool:
        return word in self._known
