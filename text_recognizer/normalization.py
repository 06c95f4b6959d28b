"""Unicode normalisation of transcriptions, shared by data loading (training, evaluation) and alphabets.

Why: the same visible "é" may be stored composed (U+00E9, NFC) or decomposed ("e" + U+0301, NFD),
depending on the tool that wrote the file. Unnormalised, they would be two different labels and two
different classes. Every label is normalised with one form (NFC by default) before it is counted
or encoded.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

NORMALIZATIONS = ("NFC", "NFD", "none")


def normalizer(form: str) -> Callable[[str], str]:
    """The function that normalises a label: ``NFC``, ``NFD`` or ``none`` (identity)."""
    if form not in NORMALIZATIONS:
        raise ValueError(f"unicode normalization must be one of {NORMALIZATIONS}, got {form!r}")
    if form == "none":
        return _identity
    return lambda text: unicodedata.normalize(form, text)


def _identity(text: str) -> str:
    return text
