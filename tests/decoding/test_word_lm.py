"""Tests for text_recognizer.decoding.word_lm: the word n-gram model that re-ranks the beam's readings."""

from __future__ import annotations

import math

import pytest

from text_recognizer.decoding.word_lm import (
    WordLanguageModel,
    arpa_unigrams,
    arpa_vocabulary,
    build_word_arpa,
    read_lexicon,
    words,
)

TEXT = ["I am very sorry to hear it.", "I am sorry to hear of the death of your father."] * 3 + [
    "We were very glad to hear from you.", "The letter came this morning."]


@pytest.fixture(scope="module")
def model() -> WordLanguageModel:
    return WordLanguageModel(build_word_arpa(TEXT, order=2, min_count=1))


def test_words_are_iam_tokens_lower_cased() -> None:
    assert words("I am Sorry, it's late.") == ["i", "am", "sorry", ",", "it", "'s", "late", "."]
    assert words("   ") == []


def test_a_phrase_it_has_read_beats_a_near_miss(model) -> None:
    real, unknown, count = model.score("I am very sorry to hear it.")
    garbled, garbled_unknown, garbled_count = model.score("I am verg sorny to hear it.")
    assert (unknown, count) == (0, 8) and (garbled_unknown, garbled_count) == (2, 8)
    assert real > garbled + 5  # natural-log units
    assert math.isfinite(model.score("")[0])  # an empty reading: just <s> </s>


def test_word_order_matters_with_bigrams(model) -> None:
    assert model.score("sorry to hear")[0] > model.score("hear to sorry")[0]


def test_unigrams_and_known_words(model) -> None:
    unigrams = arpa_unigrams(build_word_arpa(TEXT, order=2, min_count=1))
    assert list(unigrams) == arpa_vocabulary(build_word_arpa(TEXT, order=2, min_count=1))
    assert unigrams["sorry"] > unigrams["morning"]  # seen 6 times against once
    assert sum(10 ** p for w, p in unigrams.items() if w != "<s>") == pytest.approx(1.0, abs=1e-3)
    assert model.unigram_log10 == unigrams
    assert model.is_known("sorry") and not model.is_known("sorny") and not model.is_known("<unk>")
    assert "sorry" in model.known_words and "<unk>" not in model.known_words


def test_numbers_and_punctuation_are_never_unknown(model) -> None:
    assert model.score("I am 1905 , ; sorry")[1] == 0
    assert model.score("I am Lathrop")[1] == 1


def test_a_lexicon_makes_words_known(tmp_path, model) -> None:
    listing = tmp_path / "dict.txt"
    listing.write_text(";;; a comment\nLATHROP  L EY1 TH R AH0 P\nLATHROP(1)  L AE1 TH R AH0 P\nA.  EY1\n"
                       "Sorry\n\n", encoding="utf-8")
    other = tmp_path / "names.txt"
    other.write_text("Branner\nlathrop\n", encoding="utf-8")
    lexicon = read_lexicon([listing, other])
    assert lexicon == ["branner", "lathrop", "sorry"]  # "a." is not a word of letters
    arpa = build_word_arpa(TEXT, order=2, min_count=1)
    with_lexicon = WordLanguageModel(arpa, lexicon)
    assert model.score("Dear Mr Lathrop")[1] == 3 and with_lexicon.score("Dear Mr Lathrop")[1] == 2
    assert with_lexicon.score("Dear Mr Lathrop")[0] == model.score("Dear Mr Lathrop")[0]  # the LM is unchanged
    with pytest.raises(ValueError, match="not a file"):
        read_lexicon([tmp_path / "none.txt"])
    with pytest.raises(ValueError, match="non-empty list"):
        read_lexicon(str(listing))
    (tmp_path / "empty.txt").write_text("123\n;;; x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no words"):
        read_lexicon([tmp_path / "empty.txt"])


def test_pruned_model_is_smaller_and_keeps_every_word() -> None:
    full, pruned = build_word_arpa(TEXT, 2, 1), build_word_arpa(TEXT, 2, 2)
    assert len(pruned) < len(full)
    assert arpa_vocabulary(pruned) == arpa_vocabulary(full)  # only word pairs are pruned
    assert "ngram 2=" in pruned and "morning" in arpa_vocabulary(pruned)
    WordLanguageModel(pruned)  # KenLM reads it


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="no usable text"):
        build_word_arpa(["", "  "])
    with pytest.raises(ValueError, match="no unigrams"):
        arpa_vocabulary("not an arpa text")
    with pytest.raises(ValueError, match="<unk>"):
        WordLanguageModel("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\tword\n\n\\end\\\n")
