"""The languages of decoder bundles (text_recognizer.decoding.language): codes, names, the letters a model needs,
and the auto rule, with character LMs built here from short English and French texts."""

from __future__ import annotations

import pytest

from tests.decoding.bilingual import ENGLISH, FRENCH, LATIN, bundle_for
from text_recognizer.decoding.beam import BeamDecoder, BeamOptions
from text_recognizer.decoding.bundle import arpa_text
from text_recognizer.decoding.language import (
    AUTO,
    LanguageError,
    check_language,
    choose_language,
    described,
    language_name,
    log10_per_character,
    missing_letters,
    parse_language,
)


@pytest.fixture(scope="module")
def scorers() -> dict:
    """language -> log10 p(text) under a character 4-gram of that language's sentences (KenLM, as in the search)."""
    return {language: BeamDecoder(LATIN, BeamOptions(), arpa_text(bundle_for(language))).char_log10
            for language in ("en", "fr")}


def test_codes_and_names() -> None:
    assert check_language("fr") == "fr" and parse_language(" FR ") == "fr" and parse_language("Auto") == AUTO
    assert parse_language(None) is None
    for bad in ("french", "f", "e1", "", 7, "fr-FR"):
        with pytest.raises(LanguageError, match="ISO 639-1"):
            parse_language(bad)
    assert language_name("fr") == "French" and language_name("en") == "English"
    assert language_name("qq") == "qq" and described("fr") == "French (fr)" and described("qq") == "qq"


def test_missing_letters() -> None:
    assert missing_letters("fr", LATIN.charset) == ""
    assert missing_letters("en", "abc") == ""  # English needs no letters beyond ASCII's
    assert "é" in missing_letters("fr", "abcdefghijklmnopqrstuvwxyz") and "ç" in missing_letters("fr", "abc")


def test_the_char_lm_scores_its_own_language_higher(scorers) -> None:
    for text, own, other in (("the house of my brother", "en", "fr"), ("la maison de mon frère", "fr", "en")):
        assert log10_per_character([text], scorers[own]) > log10_per_character([text], scorers[other])


def test_auto_picks_the_language_of_the_greedy_reading(scorers) -> None:
    assert choose_language(["nous sommes allés à la plage avec les enfants"], scorers) == "fr"
    assert choose_language(["we went to the beach with the children"], scorers) == "en"
    # text the LMs never saw, without accents: the letter sequences still tell
    assert choose_language(["je pense que tu devrais venir"], scorers) == "fr"
    assert choose_language(["i think that you should come"], scorers) == "en"


def test_a_page_is_decided_from_all_its_lines_together(scorers) -> None:
    page = [FRENCH[0], FRENCH[3], "the end"]  # two French lines and a short English one
    assert [choose_language([line], scorers) for line in page] == ["fr", "fr", "en"]
    assert choose_language(page, scorers) == "fr"
    assert choose_language([ENGLISH[1], ENGLISH[4], "la fin"], scorers) == "en"


def test_another_language_must_win_by_the_margin() -> None:
    own = {"en": lambda text: -1.0 * (len(text) + 1), "fr": lambda text: -0.95 * (len(text) + 1)}
    assert choose_language(["x"], own, margin=0.0) == "fr"  # better by 0.05 per character
    assert choose_language(["x"], own, margin=0.1) == "en"  # ... not by 0.1: the model's own language stays
    assert choose_language(["x"], own) == "en"  # AUTO_MARGIN = 0.12


def test_ties_and_edge_cases(scorers) -> None:
    flat = {"fr": lambda text: -1.0 * (len(text) + 1), "en": lambda text: -1.0 * (len(text) + 1)}
    assert choose_language(["anything"], flat) == "fr"  # a tie goes to the first language offered
    assert choose_language([], scorers) == "en"
    assert choose_language([""], {"en": scorers["en"]}) == "en"
    with pytest.raises(ValueError, match="at least one"):
        choose_language(["text"], {})
