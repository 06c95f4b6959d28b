"""The guideline's rules (docs/transcription.md), each on the example the document gives."""

from __future__ import annotations

import pytest

from text_recognizer.codec import LATIN_CHARSET
from training.sources.transcription import normalise


@pytest.mark.parametrize("label, expected", [
    ("Seine &amp; Oise", "Seine & Oise"),                        # 1 double escape
    ("e\u0301te\u0301", "été"),                                  # 4 NFC
    ("Prud\u2019hommes \u2014 vu", "Prud'hommes - vu"),          # 5 lookalikes
    ("la complice de >< arrestation", "la complice de # arrestation"),  # 6 crossed out
    ("de prié >au< a la", "de prié # a la"),
    ("sa <> <>", "sa # #"),
    ("l'eau \u27e6elle descend\u27e7, la", "l'eau #, la"),
    ("M^r Baudelot le 1^er jour, S.^t Roch", "Mr Baudelot le 1er jour, S.t Roch"),  # 7 superscript
    ("\ua751 Vos lr\u1ebds du 2^e", "p Vos lres du 2e"),          # 8 abbreviation letters, 10 marks
    ("\u017farrester a une \u017feule", "sarrester a une seule"),  # long s
    ("soeur \u204a cousine", "soeur & cousine"),                 # Tironian et
    ("im\u00ac", "im-"),                                         # hyphen sign
    ("quoy q\u2038 ils", "quoy q ils"),                           # 9 insertion mark
    ("en effet, \u22ce les pays", "en effet, les pays"),
    ("Vr\u0303e q\u0336 celles", "Vre q celles"),                # 10 marks outside the alphabet
    ("BA\u0134ENOV", "BAJENOV"),
    ("declara\u00f5n, se\u00f1or, d\u00fce", "declaraõn, señor, düe"),  # marks the alphabet has stay
    ("  demt   \u00e0  Paris ", "demt à Paris"),                  # 11 spaces
    ("de vue RATIONEL, qu#'IDEOLOGIQUE", "de vue RATIONEL, qu#'IDEOLOGIQUE"),  # kept as written
    ("GUERRE. [1932]", "GUERRE. [1932]"),
    ("somme totale XXXV livres", "somme totale XXXV livres"),   # a Roman numeral is not 'XXX'
])
def test_rules_rewrite_labels(label, expected):
    outcome = normalise(label)
    assert outcome.reason is None, outcome.reason
    assert outcome.text == expected
    assert all(c in LATIN_CHARSET for c in outcome.text)


@pytest.mark.parametrize("label, reason", [
    ("trouverés [?] vous bon", "unread"),                      # 3
    ("[[véntre?]] presque", "unread"),
    ("d'une a [illisible] rue", "unread"),
    ("les XXX de Blouzy", "unread"),
    ("le moyen d'un aXXXX C", "unread"),
    ("@@@&@se présenta", "unread"),
    ("\u00a5", "empty"),                                        # 12 (with ¥ left out by the source)
    ("; < on > < on > auc", "unpaired"),                        # 13
    ("\u03b5v lo\u03b9\u03c2", "outside the alphabet"),          # 14
    ("Suite du récit \u2192 Le vent", "outside the alphabet"),
])
def test_lines_left_out_say_why(label, reason):
    outcome = normalise(label, leave_out=() if reason != "empty" else (), replace={"\u00a5": ""})
    assert outcome.text is None
    assert reason in outcome.reason


def test_source_signs_from_the_manifest():
    assert normalise("\u20acProcuration", leave_out=("\u20ac",)).reason == "source sign '€'"
    assert normalise("\u20ac 5", leave_out=()).text == "€ 5"  # a real euro sign where the source does not mark with it
    assert normalise("M~gr Le duc", replace={"M~gr": "Mgr", "~": ""}).text == "Mgr Le duc"
    assert normalise("Décret du 21~", replace={"~": ""}).text == "Décret du 21"


def test_out_of_alphabet_names_the_characters():
    outcome = normalise("4 \u00bd ans")
    assert outcome.text is None and "U+00BD" in outcome.reason
