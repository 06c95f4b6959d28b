"""Decoding lines per language (text_recognizer.decoding.line_decoders): a named language decodes with its own
bundle, auto chooses per line or once for a page from the greedy readings, greedy reads alike in every language, and a
language without a bundle is refused before anything is decoded. The log-probabilities spell known texts."""

from __future__ import annotations

import pytest

from tests.decoding.bilingual import ENGLISH, FRENCH, LATIN, bundle_for, geometry, spelled
from text_recognizer.decoding.bundle_set import BundleSet
from text_recognizer.decoding.language import AUTO, LanguageError
from text_recognizer.decoding.line_decoders import LanguageDecoders
from text_recognizer.decoding.readings import SECTION


@pytest.fixture(scope="module")
def bundles() -> BundleSet:
    return BundleSet({"en": bundle_for("en"), "fr": bundle_for("fr")}, where="model.pt")


def items(*texts: str) -> list:
    return [(lp, geometry(lp)) for lp in map(spelled, texts)]


def test_a_named_language_decodes_with_its_bundle(bundles) -> None:
    decoders = LanguageDecoders(LATIN, bundles, "beam")
    for language in ("en", "fr"):
        assert decoders.language_for("beam", language) == language
        assert decoders.get("beam", 1, language).bundle["language"] == language
        [line] = decoders.decode(items(FRENCH[2]), "beam", 1, language)
        assert line.language == language and line.text == FRENCH[2]  # sharp frames: the text is what they spell
        assert line.to_dict()["language"] == language


def test_auto_chooses_per_line_or_once_for_a_page(bundles) -> None:
    decoders = LanguageDecoders(LATIN, bundles, "beam")
    assert decoders.language == "en"  # several languages: the model's own by default, auto when asked
    page = items(FRENCH[1], FRENCH[4], "the end")
    per_line = decoders.decode(page, "beam", 1, AUTO)
    assert [line.language for line in per_line] == ["fr", "fr", "en"]
    together = decoders.decode(page, "beam", 1, AUTO, together=True)
    assert [line.language for line in together] == ["fr", "fr", "fr"]
    assert [line.text for line in together] == [FRENCH[1], FRENCH[4], "the end"]
    assert [line.language for line in decoders.decode(items(ENGLISH[3]), "beam", 1, AUTO)] == ["en"]


def test_greedy_reads_alike_in_every_language(bundles) -> None:
    decoders = LanguageDecoders(LATIN, bundles, "greedy", language="fr")  # accepted: greedy reads alike
    assert decoders.language is None and decoders.language_for("greedy", "fr") is None
    lines = decoders.decode(items(FRENCH[0]), "greedy", 1, decoders.language_for("greedy", "fr"))
    assert lines[0].language is None and lines[0].text == FRENCH[0] and "language" not in lines[0].to_dict()
    assert decoders.get("greedy", 1, "fr") is decoders.get("greedy", 1, None)  # one greedy decoder for all
    without_lm = LanguageDecoders(LATIN, bundles, "beam", use_lm=False, language="en")
    assert without_lm.language_for("beam", "fr") is None  # beam without LMs reads alike in every language too


def test_a_language_without_a_bundle_is_refused(bundles) -> None:
    with pytest.raises(LanguageError, match=r"no decoder bundle for German \(de\). It reads English \(en\), French"):
        LanguageDecoders(LATIN, bundles, "beam", language="de")
    for decoder, use_lm in (("greedy", True), ("beam", False)):  # refused alike by every decoder
        with pytest.raises(LanguageError, match=r"no decoder bundle for German \(de\)"):
            LanguageDecoders(LATIN, bundles, decoder, language="de", use_lm=use_lm)
    decoders = LanguageDecoders(LATIN, bundles, "greedy")
    with pytest.raises(LanguageError, match="German"):
        decoders.language_for("greedy", "de")
    english_only = LanguageDecoders(LATIN, BundleSet({"en": bundle_for("en")}), "beam")
    assert english_only.language == "en" and english_only.language_for("beam", AUTO) == "en"
    with pytest.raises(LanguageError, match="French"):
        english_only.language_for("beam", "fr")


def test_readings_per_language(bundles) -> None:
    three = {"shift": 2, "beam": {"lm_weight": 1.0}, "calibration": {}}
    mixed = BundleSet({"en": {**bundle_for("en"), SECTION: three}, "fr": bundle_for("fr")})
    decoders = LanguageDecoders(LATIN, mixed, "beam", language="en", readings=3)
    assert decoders.readings_available("en") == (1, 3) and decoders.readings_available("fr") == (1,)
    assert decoders.readings_available(AUTO) == (1,) and decoders.readings_available(None) == (1, 3)
    assert decoders.view(3, "en")[1] == 2
    with pytest.raises(ValueError, match="three readings"):
        decoders.view(3, "fr")
    with pytest.raises(ValueError, match="three readings"):
        LanguageDecoders(LATIN, mixed, "beam", readings=3, language=AUTO)  # auto needs them in every bundle


def test_beam_options_apply_to_every_language_of_the_default(bundles) -> None:
    decoders = LanguageDecoders(LATIN, bundles, "beam", beam_options={"beam_width": 3})
    assert {decoders.get("beam", 1, code).options.beam_width for code in ("en", "fr")} == {3}
    with pytest.raises(ValueError, match="beam_width"):
        LanguageDecoders(LATIN, bundles, "beam", beam_options={"beam_width": 0})
