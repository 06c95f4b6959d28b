"""Tests for text_recognizer/normalization.py: Unicode forms and the lookalike fold."""

from __future__ import annotations

import pytest

from text_recognizer.codec import LATIN_CHARSET
from text_recognizer.normalization import LOOKALIKES, fold_lookalikes, normalizer


def test_nfc_composes_and_folds_typographic_quotes_and_dashes():
    nfc = normalizer("NFC")
    assert nfc("l\u2019e\u0301te\u0301 \u2014 \u201cdit-il\u201d\u2026") == "l'été - \"dit-il\"..."
    assert nfc("\u00ab\u00a0Bonjour\u00a0\u00bb") == "« Bonjour »"  # guillemets stay; no-break spaces fold


def test_nfd_decomposes_and_still_folds():
    assert normalizer("NFD")("\u00e9\u2019") == "e\u0301'"


def test_none_keeps_the_text_as_stored():
    assert normalizer("none")("l\u2019\u00e9t\u00e9") == "l\u2019\u00e9t\u00e9"
    with pytest.raises(ValueError, match="must be one of"):
        normalizer("NFKC")


def test_every_lookalike_folds_into_the_latin_alphabet():
    for character, target in LOOKALIKES.items():
        assert character not in LATIN_CHARSET
        assert set(fold_lookalikes(character)) <= set(LATIN_CHARSET), (character, target)
