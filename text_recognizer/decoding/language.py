"""The languages of decoder bundles: their codes and names, whether a model's alphabet can write one, and the
``auto`` rule that picks the language a reading is beam-decoded in.

Why: one model with one Latin alphabet reads English and French alike, but beam search reads better with the
language models of the text's own language, and a decoder bundle holds the models of one language
(``bundle.py``; a bundle without a ``language`` field is English). Greedy decoding uses no language model,
so the language only matters for beam search.

The ``auto`` rule (``choose_language``): the greedy reading comes from the frame probabilities the beam search
starts from, so it costs no extra run of the model; it is scored under each language's character n-gram
model, and the language that gives it the higher log-probability per character (the end of the line counts
as one more) wins, where a language other than the model's own must win by ``AUTO_MARGIN``. Then one beam
search runs, with that language's models only: ``auto`` costs one search
plus a few hundred LM look-ups a line, not a search per language. A page is decided once, from all its lines
together (their log-probabilities and characters summed), so all its lines are read in one language. A tie
(an empty reading) goes to the first language offered, the model's primary one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

#: ``language=`` value asking for the ``auto`` rule.
AUTO = "auto"
#: How much better (log10 per character) another language's character LM must score a greedy reading than the
#: model's own language's before ``auto`` picks it. Chosen on IAM val's first half and Copiste val's tuning half
#: (lines put in the wrong language: 27 + 1 of 1,368 at 0, 7 + 4 at 0.12, 5 + 6 at 0.2; benchmarks/results/
#: bundled_model.md, "auto"): noisy greedy readings of hard hands score better under the smaller French LM, so
#: without a margin half of the 1905 letters' lines went to French.
AUTO_MARGIN = 0.12

#: ISO 639-1 code -> (its name, as PAGE-XML's ``primaryLanguage`` spells it; the lower-case letters a
#: model's alphabet needs to write the language). Other two-letter codes are allowed; they have no name
#: beyond their code and no letters are checked.
LANGUAGES: dict[str, tuple[str, str]] = {
    "en": ("English", ""),
    "fr": ("French", "àâçéèêëîïôùûüœ"),
    "de": ("German", "äöüß"),
    "es": ("Spanish", "áéíñóúü"),
    "it": ("Italian", "àèéìòù"),
    "pt": ("Portuguese", "àáâãçéêíóôõú"),
    "nl": ("Dutch", "ëï"),
    "da": ("Danish", "æøå"),
    "no": ("Norwegian", "æøå"),
    "sv": ("Swedish", "åäö"),
    "fi": ("Finnish", "äö"),
    "la": ("Latin", ""),
}

_CODE = re.compile(r"[a-z]{2}")


class LanguageError(ValueError):
    """A language that is no ISO 639-1 code, that the model has no decoder bundle for, or cannot write."""


def check_language(code: object) -> str:
    """``code`` if it is an ISO 639-1 code (two lower-case letters, ``"en"``), else ``LanguageError``."""
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise LanguageError(f"a language is an ISO 639-1 code of two lower-case letters such as 'en' or 'fr', "
                            f"got {code!r}")
    return code


def parse_language(value: str | None) -> str | None:
    """A requested language (``--language``, ``?language=``): ``None`` (the default), ``"auto"`` or a code;
    case and surrounding spaces are forgiven (``" FR"`` -> ``"fr"``)."""
    if value is None:
        return None
    text = value.strip().lower() if isinstance(value, str) else value
    return AUTO if text == AUTO else check_language(text)


def language_name(code: str) -> str:
    """``"fr"`` -> ``"French"``; a code not in ``LANGUAGES`` names itself."""
    return LANGUAGES.get(code, (code, ""))[0]


def described(code: str) -> str:
    """``"fr"`` -> ``"French (fr)"``, for messages."""
    name = language_name(code)
    return code if name == code else f"{name} ({code})"


def missing_letters(code: str, charset: str) -> str:
    """The letters ``code``'s language needs that ``charset`` lacks (empty: it can write the language)."""
    return "".join(letter for letter in LANGUAGES.get(code, ("", ""))[1] if letter not in charset)


def log10_per_character(texts: Sequence[str], log10_prob: Callable[[str], float]) -> float:
    """The mean log10-probability per character of ``texts`` under one LM, each line's end counted as a character."""
    return sum(log10_prob(text) for text in texts) / sum(len(text) + 1 for text in texts)


def choose_language(texts: Sequence[str], scorers: Mapping[str, Callable[[str], float]],
                    margin: float = AUTO_MARGIN) -> str:
    """The ``auto`` rule (see the module docstring): the language of ``scorers`` (language -> the log10
    probability of a line under its character LM, in order of preference: the model's own first) whose LM gives
    ``texts`` together the highest log-probability per character, where another language must beat the first
    by more than ``margin`` (log10 per character) to be chosen; ties go to the earlier language."""
    if not scorers:
        raise ValueError("choose_language needs at least one language's scorer")
    first = next(iter(scorers))
    if not texts:
        return first
    rates = {language: log10_per_character(texts, log10_prob) for language, log10_prob in scorers.items()}
    others = [language for language in rates if language != first and rates[language] > rates[first] + margin]
    return max(others, key=lambda language: rates[language], default=first)
