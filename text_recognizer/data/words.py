"""The word list of the synthetic line generator, read from the package data file ``words.txt``.

The list (~4,000 common English words with their frequencies, derived from wordfreq; attribution,
licence (CC BY-SA 4.0) and format are in the file's header) is data, not code, so it lives in a text
file shipped with the package and is parsed once, on first use.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

import numpy as np

#: Package data file holding the word list.
WORDS_FILE = "words.txt"


@lru_cache(maxsize=1)
def word_table() -> tuple[tuple[str, ...], np.ndarray]:
    """(words in frequency order, their relative frequencies summing to 1)."""
    text = files("text_recognizer.data").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    words: list[str] = []
    freqs: list[float] = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if not parts[0].isdigit() or len(parts) < 2:
            raise ValueError(f"{WORDS_FILE} line {number}: expected '<centibels> <words...>', got {line!r}")
        centibels = int(parts[0])
        for word in parts[1:]:
            words.append(word)
            freqs.append(10.0 ** (-centibels / 100.0))
    p = np.asarray(freqs, dtype=np.float64)
    return tuple(words), p / p.sum()


def words() -> tuple[str, ...]:
    """All words, most frequent first."""
    return word_table()[0]


def sampling_cdf(exponent: float = 0.75) -> np.ndarray:
    """Cumulative sampling distribution over ``words()`` with frequencies raised to ``exponent``.

    An exponent below 1 flattens the Zipf curve a little, so that content words are not drowned by
    "the", "of" and "and" while frequent words still dominate.
    """
    return _cdf(round(float(exponent), 6))


@lru_cache(maxsize=8)
def _cdf(exponent: float) -> np.ndarray:
    p = word_table()[1] ** exponent
    c = np.cumsum(p / p.sum())
    c[-1] = 1.0
    return c
