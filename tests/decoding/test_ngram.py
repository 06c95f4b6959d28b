"""Tests for text_recognizer.decoding.ngram: interpolated Kneser-Ney estimation and ARPA output."""

from __future__ import annotations

import math

import pytest

from text_recognizer.decoding.ngram import (
    BOS,
    EOS,
    UNK,
    estimate_kneser_ney,
    format_arpa,
    interpolate,
    parse_arpa,
    query,
    write_arpa,
)

SENTENCES = [list("the|cat|sat"), list("the|hat"), list("a|cat|ate|the|mat"), list("that")]


def prob(tables, history: tuple[str, ...], word: str) -> float:
    """ARPA back-off query: p(word | history), following back-off weights as a reader does."""
    order = len(tables)
    history = history[-(order - 1):] if order > 1 else ()
    backoff = 0.0
    while True:
        gram = (*history, word)
        if gram in tables[len(gram) - 1]:
            return 10 ** (tables[len(gram) - 1][gram][0] + backoff)
        if history in tables[len(history) - 1] if history else False:
            backoff += tables[len(history) - 1][history][1]
        if not history:
            return 10 ** (tables[0][(UNK,)][0] + backoff)
        history = history[1:]


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_every_context_sums_to_one(order: int) -> None:
    tables = estimate_kneser_ney(SENTENCES, order)
    vocab = sorted({tok for s in SENTENCES for tok in s}) + [EOS, UNK]
    histories = {()} | {gram[:-1] for table in tables for gram in table if len(gram) > 1} | {("z", "q")}
    for history in histories:
        total = sum(prob(tables, history, w) for w in vocab)
        assert total == pytest.approx(1.0, abs=1e-9), history


def test_context_prefers_what_followed_it() -> None:
    tables = estimate_kneser_ney(SENTENCES, 3)
    assert prob(tables, ("t", "h"), "e") > prob(tables, ("t", "h"), "c")
    assert prob(tables, (BOS,), "t") > prob(tables, (BOS,), "m")


def test_write_arpa_is_read_by_kenlm(tmp_path) -> None:
    from flashlight.lib.text.decoder.kenlm import KenLM
    from flashlight.lib.text.dictionary import Dictionary

    tables = estimate_kneser_ney(SENTENCES, 3)
    path = write_arpa(tables, tmp_path / "lm.arpa")
    tokens = sorted({tok for s in SENTENCES for tok in s})
    lm = KenLM(str(path), Dictionary(tokens))
    state, score = lm.score(lm.start(False), tokens.index("t"))
    assert score == pytest.approx(math.log10(prob(tables, (BOS,), "t")), abs=1e-4)
    _, score = lm.score(state, tokens.index("h"))
    assert score == pytest.approx(math.log10(prob(tables, (BOS, "t"), "h")), abs=1e-4)


@pytest.mark.parametrize(("sentences", "order", "error"), [
    (SENTENCES, 0, ValueError), (SENTENCES, 2.5, ValueError), (SENTENCES, True, ValueError),
    ([], 3, ValueError), ([["a b"]], 2, ValueError), ([[""]], 2, ValueError), ([[BOS]], 2, ValueError),
])
def test_bad_arguments(sentences, order, error) -> None:
    with pytest.raises(error):
        estimate_kneser_ney(sentences, order)


@pytest.mark.parametrize("order", [2, 3, 4])
def test_pruned_model_still_sums_to_one(order: int) -> None:
    full = estimate_kneser_ney(SENTENCES, order)
    pruned = estimate_kneser_ney(SENTENCES, order, min_count=2)
    assert pruned[0] == {gram: value for gram, value in pruned[0].items() if gram in full[0]}
    assert all(len(p) < len(f) for p, f in zip(pruned[1:], full[1:]))
    vocab = sorted({tok for s in SENTENCES for tok in s}) + [EOS, UNK]
    histories = {()} | {gram[:-1] for table in full for gram in table if len(gram) > 1}
    for history in histories:
        total = sum(prob(pruned, history, w) for w in vocab)
        assert total == pytest.approx(1.0, abs=1e-9), history
    for table in pruned[1:]:  # what is kept keeps its probability; its prefix is kept too
        for gram, (logp, _) in table.items():
            assert logp == full[len(gram) - 1][gram][0] and gram[:-1] in pruned[len(gram) - 2]


def test_pruned_model_is_read_by_kenlm(tmp_path) -> None:
    from flashlight.lib.text.decoder.kenlm import KenLM
    from flashlight.lib.text.dictionary import Dictionary

    tables = estimate_kneser_ney(SENTENCES, 3, min_count=2)
    tokens = sorted({tok for s in SENTENCES for tok in s})
    lm = KenLM(str(write_arpa(tables, tmp_path / "lm.arpa")), Dictionary(tokens))
    state = lm.start(False)
    for history, word in [((BOS,), "t"), ((BOS, "t"), "h"), (("t", "h"), "a")]:
        state, score = lm.score(state, tokens.index(word))
        assert score == pytest.approx(math.log10(prob(tables, history, word)), abs=1e-4)


@pytest.mark.parametrize("min_count", [0, 1.5, True])
def test_bad_min_count(min_count) -> None:
    with pytest.raises(ValueError, match="min_count"):
        estimate_kneser_ney(SENTENCES, 2, min_count=min_count)


OTHER = [list("the|dog|ran"), list("a|dog|and|a|zebra"), list("quiz")]


def test_parse_arpa_reads_back_what_format_arpa_writes() -> None:
    tables = estimate_kneser_ney(SENTENCES, 4)
    back = parse_arpa(format_arpa(tables))
    assert [set(t) for t in back] == [set(t) for t in tables]
    for table, again in zip(tables, back):
        for gram, (logp, backoff) in table.items():
            assert again[gram] == pytest.approx((logp, backoff), abs=1e-6)
    with pytest.raises(ValueError, match="declares"):
        parse_arpa(format_arpa(tables).replace("ngram 2=", "ngram 2=1"))


@pytest.mark.parametrize("weight", [0.0, 0.3, 1.0])
def test_interpolation_sums_to_one_and_mixes_the_two_models(weight: float) -> None:
    base, other = estimate_kneser_ney(SENTENCES, 3), estimate_kneser_ney(OTHER, 3)
    mixed = interpolate(base, other, weight)
    vocab = sorted({tok for s in SENTENCES + OTHER for tok in s}) + [EOS, UNK]
    histories = {()} | {gram[:-1] for table in mixed for gram in table if len(gram) > 1} | {("z", "q")}
    for history in histories:
        assert sum(prob(mixed, history, w) for w in vocab) == pytest.approx(1.0, abs=1e-9), history
    for gram in [("t", "h", "e"), ("d", "o", "g"), ("|", "z"), ("q",)]:  # each model's own n-grams, and neither's
        expected = sum(share * 10 ** query(tables, gram) for share, tables in ((1 - weight, base), (weight, other))
                       if (gram[-1],) in tables[0])  # a model gives a word it never saw nothing
        assert 10 ** query(mixed, gram) == pytest.approx(expected, rel=1e-9)


def test_an_interpolated_model_is_read_by_kenlm(tmp_path) -> None:
    from flashlight.lib.text.decoder.kenlm import KenLM
    from flashlight.lib.text.dictionary import Dictionary

    mixed = interpolate(estimate_kneser_ney(SENTENCES, 3), estimate_kneser_ney(OTHER, 3), 0.2)
    path = write_arpa(mixed, tmp_path / "mixed.arpa")
    tokens = sorted({tok for s in SENTENCES + OTHER for tok in s})
    lm = KenLM(str(path), Dictionary(tokens))
    _, score = lm.score(lm.start(False), tokens.index("z"))
    assert score == pytest.approx(math.log10(prob(mixed, (BOS,), "z")), abs=1e-4)
