"""Tests for text_recognizer.metrics: corpus-level CER and WER."""

from __future__ import annotations

import pytest

from text_recognizer.metrics import cer, char_edits, line_cer, wer, word_edits


@pytest.mark.parametrize(
    ("reference", "prediction", "edits"),
    [
        ("", "", 0),
        ("abc", "abc", 0),
        ("kitten", "sitting", 3),  # 2 substitutions + 1 insertion
        ("abc", "", 3),
        ("", "xy", 2),
        ("abcd", "acd", 1),  # deletion
        ("abc", "abxc", 1),  # insertion
        ("ab", "ba", 2),  # no transpositions in Levenshtein
    ],
)
def test_char_edits(reference: str, prediction: str, edits: int) -> None:
    assert char_edits(reference, prediction) == edits


def test_word_edits_use_whitespace_words() -> None:
    assert word_edits("the cat sat", "the cat sat") == 0
    assert word_edits("the cat sat", "the  cat   sat ") == 0
    assert word_edits("the cat sat", "the bat sat") == 1
    assert word_edits("the cat sat", "the cat") == 1
    assert word_edits("the cat", "a the cat on") == 2
    assert word_edits("", "") == 0


def test_cer_is_corpus_level_not_mean_of_lines() -> None:
    references = ["a", "abcdefghij"]
    predictions = ["b", "abcdefghij"]
    # corpus: 1 edit / 11 characters; mean of lines would be (1 + 0) / 2
    assert cer(references, predictions) == pytest.approx(1 / 11)
    assert cer(references, predictions) != pytest.approx(0.5)


def test_cer_hand_computed() -> None:
    references = ["kitten", "hello world", "abc"]
    predictions = ["sitting", "helo world", ""]
    # 3 + 1 + 3 edits over 6 + 11 + 3 characters
    assert cer(references, predictions) == pytest.approx(7 / 20)


def test_cer_can_exceed_one() -> None:
    assert cer(["a"], ["xyz"]) == pytest.approx(3.0)


def test_wer_hand_computed() -> None:
    references = ["the quick brown fox", "jumps over"]
    predictions = ["the quick brown box", "jumps over the dog"]
    # 1 + 2 word edits over 4 + 2 words
    assert wer(references, predictions) == pytest.approx(3 / 6)
    assert wer(["a b c d e f g h i j", "x"], ["a b c d e f g h i j", "y"]) == pytest.approx(1 / 11)


def test_perfect_predictions() -> None:
    texts = ["one line", "another, line!"]
    assert cer(texts, texts) == 0.0
    assert wer(texts, texts) == 0.0


def test_empty_corpus_and_empty_references() -> None:
    assert cer([], []) == 0.0
    assert wer([], []) == 0.0
    assert cer([""], [""]) == 0.0
    assert wer([""], [""]) == 0.0
    assert cer([""], ["x"]) == 1.0
    assert wer(["", " "], ["", "word"]) == 1.0
    # an empty reference line still adds its prediction's edits to the corpus total
    assert cer(["", "ab"], ["x", "ab"]) == pytest.approx(1 / 2)


@pytest.mark.parametrize("metric", [cer, wer])
def test_length_mismatch_raises(metric) -> None:
    with pytest.raises(ValueError, match="2 references but 1 predictions"):
        metric(["a", "b"], ["a"])


def test_line_cer() -> None:
    assert line_cer("kitten", "sitting") == pytest.approx(0.5)
    assert line_cer("abc", "abc") == 0.0
    assert line_cer("abcd", "") == 1.0
    assert line_cer("", "") == 0.0
    assert line_cer("", "abc") == 1.0
    assert line_cer("ab", "abcdef") == pytest.approx(2.0)
