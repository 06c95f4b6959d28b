"""training.decoder.extend: a parent's bundle carried to a grown alphabet, extended with a user's text (never
replaced), the user's share chosen on held-out lines, and the language of lines detected among bundles. Small
bundles built here with the bundled model's alphabet."""

from __future__ import annotations

import math

import pytest

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import arpa_text, lexicon_words
from text_recognizer.decoding.lm_builder import LanguageModelSpec, build_decoder_bundle, char_tokens
from text_recognizer.decoding.ngram import estimate_kneser_ney, parse_arpa, query
from text_recognizer.recognizer import DEFAULT_CHECKPOINT
from training.decoder.extend import choose_weight, detect_language, extend_bundle, rebased

ENGLISH = ["the quick brown fox jumps over the lazy dog", "a quiet day by the old river",
           "read the map and move on", "seven blue cats sat on the table"] * 5
FRENCH = ["le petit chat dort sur la table", "nous avons été à la mer cet été",
          "je déclare que les informations sont exactes", "elle écrit une lettre à sa sœur"] * 5
USER = ["notaire royal au bailliage de rennes", "par devant le notaire royal soussigné"] * 5
HELD_OUT = ["le notaire royal de rennes", "par devant nous notaire"]


@pytest.fixture(scope="module")
def codec() -> Codec:
    return load_checkpoint(DEFAULT_CHECKPOINT).codec


@pytest.fixture(scope="module")
def bundles(codec) -> dict[str, dict]:
    spec = LanguageModelSpec(order=4, word_order=2, word_min_count=1, lexicon=())
    english, _ = build_decoder_bundle(ENGLISH, codec, spec, "english text")
    french, _ = build_decoder_bundle(FRENCH, codec, spec, "french text", language="fr")
    return {"en": english, "fr": french}


def line_log10(bundle: dict, text: str) -> float:
    tables, space = parse_arpa(arpa_text(bundle)), bundle["lm"]["space_token"]
    tokens, history, total = [*char_tokens(text, space), "</s>"], ["<s>"], 0.0
    for token in tokens:
        total += query(tables, tuple(history[-(len(tables) - 1):]) + (token,))
        history.append(token)
    return total


def test_the_extended_model_knows_the_user_text_and_keeps_the_parent(bundles, codec):
    french = bundles["fr"]
    extended, report = extend_bundle(french, codec, USER, HELD_OUT, "my texts")
    assert report["lines"] == len(USER) and 0 < report["char_weight"] <= 0.5  # the held-out lines want some
    assert line_log10(extended, HELD_OUT[0]) > line_log10(french, HELD_OUT[0]) + 1  # far likelier now
    # the parent's text loses at most the parent's share per character: mixed in, not replaced
    floor = line_log10(french, FRENCH[0]) + (len(FRENCH[0]) + 1) * math.log10(1 - report["char_weight"])
    assert line_log10(extended, FRENCH[0]) > floor - 0.1
    parent_grams = parse_arpa(arpa_text(french))
    mixed_grams = parse_arpa(arpa_text(extended))
    assert all(set(p) <= set(m) for p, m in zip(parent_grams, mixed_grams))  # every n-gram of the parent kept
    assert "notaire" in lexicon_words(extended) or report["words_added"] == 0
    assert extended["language"] == "fr" and extended["lm"]["source"].startswith("french text + my texts")
    assert extended["word_lm"]["source"].startswith("french text + my texts")


def test_held_out_lines_unlike_the_user_text_keep_the_parent_alone(bundles, codec):
    base = parse_arpa(arpa_text(bundles["fr"]))
    space = bundles["fr"]["lm"]["space_token"]
    user = estimate_kneser_ney([char_tokens(t, space) for t in ["zzz qqq xxx"] * 10], 4)
    weight, rates = choose_weight(base, user, [char_tokens(t, space) for t in FRENCH[:2]])
    assert weight == 0.0 and rates[0.0] == max(rates.values())
    assert choose_weight(base, user, [])[0] == 0.2  # nothing to choose with: the default share


def test_a_grown_alphabet_keeps_the_language_models(bundles, codec):
    grown = Codec(codec.charset + "ő")
    carried = rebased(bundles["en"], grown)
    assert carried["charset"] == grown.charset and arpa_text(carried) == arpa_text(bundles["en"])
    extended, _ = extend_bundle(carried, grown, ["hőt hőt the dog"] * 5, [], "mine")
    assert math.isfinite(line_log10(extended, "hőt"))
    with pytest.raises(ValueError, match="lacks"):
        rebased(bundles["en"], Codec(codec.charset.replace("q", "")))


def test_the_language_of_lines_is_detected_among_the_bundles(bundles):
    ordered = {"en": bundles["en"], "fr": bundles["fr"]}
    assert detect_language(["elle déclare que le chat dort à la mer"], ordered) == "fr"
    assert detect_language(["the old dog reads the map"], ordered) == "en"
