"""Tests for text_recognizer.decoding.rescoring: whole-line scores, forced alignment and lexicon corrections."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.beam import BeamDecoder, BeamOptions
from text_recognizer.decoding.greedy import collapse, runs
from text_recognizer.decoding.rescoring import LexiconCorrector, Rescorer, Weights, line_log_likelihoods, viterbi_path
from text_recognizer.decoding.word_lm import WordLanguageModel, build_word_arpa

CODEC = Codec(" adehlnoprt")  # blank 0, space 1, a 2, d 3, e 4, h 5, l 6, n 7, o 8, p 9, r 10, t 11
TEXT = ["the letter", "dear the", "the hat", "the pole", "dear lathrop"] * 3


def random_log_probs(frames: int, seed: int, classes: int = 3) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(frames, classes, generator=generator).log_softmax(-1)  # (T, C)


def alignments(frames: int, target: list[int], classes: int = 3):
    """Every frame path of ``frames`` classes that collapses to ``target`` (brute force)."""
    return [p for p in itertools.product(range(classes), repeat=frames) if collapse(list(p)) == target]


def path_score(log_probs: torch.Tensor, path) -> float:
    return float(sum(log_probs[t, c] for t, c in enumerate(path)))


@pytest.mark.parametrize("target", [[1], [1, 2], [1, 1], [2, 1, 2]])
def test_line_likelihood_sums_every_alignment(target) -> None:
    log_probs = random_log_probs(5, seed=len(target))
    expected = math.log(sum(math.exp(path_score(log_probs, p)) for p in alignments(5, target)))
    assert line_log_likelihoods(log_probs, [target])[0] == pytest.approx(expected, abs=1e-4)


def test_a_target_too_long_for_the_frames_is_impossible() -> None:
    log_probs = random_log_probs(3, seed=0)
    assert line_log_likelihoods(log_probs, [[1, 1, 1], [1]])[0] == -math.inf  # repeats need blanks between


@pytest.mark.parametrize("target", [[1], [1, 2], [1, 1], [2, 1, 2], [2, 2, 1]])
def test_viterbi_path_is_the_best_alignment(target) -> None:
    log_probs = random_log_probs(6, seed=7 + len(target))
    path = viterbi_path(log_probs, target)
    assert len(path) == 6 and collapse(path) == target
    best = max(path_score(log_probs, p) for p in alignments(6, target))
    assert path_score(log_probs, path) == pytest.approx(best, abs=1e-6)


def test_viterbi_path_refuses_what_cannot_fit() -> None:
    with pytest.raises(ValueError, match="3 frames cannot hold"):
        viterbi_path(random_log_probs(3, seed=1), [1, 1, 1])
    assert viterbi_path(random_log_probs(2, seed=1), []) == [0, 0]


@pytest.fixture(scope="module")
def word_model() -> WordLanguageModel:
    return WordLanguageModel(build_word_arpa(TEXT, order=2, min_count=1), lexicon=["hotel", "halt", "dealt"])


def test_neighbours_are_nearest_then_most_frequent(word_model) -> None:
    corrector = LexiconCorrector(word_model, candidates=10, max_distance=2)
    assert corrector.neighbours("lathnop") == ["lathrop"]
    near = corrector.neighbours("hale")
    assert near == ["halt", "hat", "pole"]  # one edit, then two
    assert corrector.neighbours("deat") == ["dear", "dealt", "hat"]  # at one edit, the word the model has seen first
    assert corrector.neighbours("thx") == ["the"]  # short words: one edit at most
    assert LexiconCorrector(word_model, candidates=1, max_distance=2).neighbours("hale") == near[:1]
    assert corrector.neighbours("zzzzzz") == []


def test_the_letter_filter_never_loses_a_neighbour() -> None:
    """neighbours() skips words whose letters are too different to be near; it must return what
    checking every word would. 71 letters (Latin, Greek, Cyrillic), so some letters share a bit, and
    queries with letters no word has."""
    import random

    from rapidfuzz.distance import Levenshtein

    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyz" + "αβγδεζηθικλμνξοπρστυφχψω" + "абвгдежзийклмнопрстуф"
    lexicon = sorted({"".join(rng.choices(letters[:30], k=rng.randint(2, 7))) for _ in range(1500)}
                     | {"".join(rng.choices(letters, k=rng.randint(2, 7))) for _ in range(1500)})
    model = WordLanguageModel(build_word_arpa(TEXT, order=2, min_count=1), lexicon=lexicon)
    corrector = LexiconCorrector(model, candidates=10_000, max_distance=2)
    known = sorted(w for w in model.known_words if w.isalpha())
    assert len(corrector._bits) > 64  # letters share bits
    for _ in range(150):
        base = rng.choice(lexicon)
        query = list(base)
        for _ in range(rng.randint(0, 3)):
            query.insert(rng.randint(0, len(query)), rng.choice(letters + "ÿ"))  # ÿ: in no word
        query = "".join(query)[:9]
        limit = 2 if len(query) > 3 else 1
        expected = {w for w in known if Levenshtein.distance(query, w) <= limit}
        assert set(corrector.neighbours(query)) == expected, query


def test_words_outside_the_alphabet_are_never_proposed() -> None:
    """'naïve' is in the lexicon but the model cannot write 'ï': proposing it would make the acoustic
    score fail (an error 500 for a line reading 'naive' before this was found)."""
    model = WordLanguageModel(build_word_arpa(TEXT, order=2, min_count=1), lexicon=["naïve", "naive", "nave"])
    assert LexiconCorrector(model, 12, 2).neighbours("naiwe") == ["naive", "nave", "naïve"]
    assert LexiconCorrector(model, 12, 2, alphabet=" aeinvw").neighbours("naiwe") == ["naive", "nave"]
    codec = Codec(" aeinvw")
    line = peaked_for(codec, "naiwe", 12.0)
    options = BeamOptions(beam_width=4, word_lm_weight=0.1, word_lm_bonus=0.0, oov_penalty=3.0)
    text = codec.decode(collapse(BeamDecoder(codec, options, word_model=model).best_path(line)))
    assert text == "naiwe"  # the image is sure of its 'w'; the point is that no candidate breaks the scoring


def test_slots_are_the_unknown_words_with_their_replacements(word_model) -> None:
    corrector = LexiconCorrector(word_model, candidates=3, max_distance=2)
    assert corrector.slots("the letter") == []  # nothing unknown
    assert corrector.slots("Dear Lathnop") == [(5, 12, ["Lathrop"])]  # capitals kept
    assert corrector.slots("DEAR LATHNOP") == [(5, 12, ["LATHROP"])]
    assert corrector.slots("the lettel, lathnop") == [(4, 10, ["letter"]), (12, 19, ["lathrop"])]
    assert corrector.slots("the x zzzzzz") == []  # single letters are left; no neighbour, no slot


def test_character_frames_follow_the_path() -> None:
    #                                   t  t  -  h  -  -  e  e  -  e
    assert [(a, b) for _, a, b in runs([5, 5, 0, 4, 0, 0, 3, 3, 0, 3])] == [(0, 1), (3, 3), (6, 7), (9, 9)]
    assert runs([0, 0]) == []


def peaked_for(codec: Codec, text: str, peak: float) -> torch.Tensor:
    """Frames spelling ``text`` with a blank after each character, ``peak`` logits over the rest."""
    path = [i for c in codec.encode(text) for i in (c, 0)]
    logits = torch.zeros(len(path), codec.num_classes)
    logits[torch.arange(len(path)), torch.tensor(path)] = peak
    return logits.log_softmax(-1)  # (T, C)


def peaked(text: str, peak: float) -> torch.Tensor:
    return peaked_for(CODEC, text, peak)


def test_a_correction_wins_only_when_the_image_allows_it(word_model) -> None:
    """'dear lathnop': the 'n' frame is unsure between n and r; a lexicon word then beats the misreading.
    With the image sure of its 'n', the unknown reading stays."""
    weights = Weights(lm_weight=0.0, word_weight=0.0, word_bonus=0.0, oov_penalty=3.0)
    rescorer = Rescorer(CODEC, weights, word_model, corrector=LexiconCorrector(word_model, 12, 2))
    unsure = peaked("dear lathnop", 12.0).exp()
    n_frame = 2 * len("dear lath")
    unsure[n_frame] = 0.0
    unsure[n_frame, CODEC.encode("n")[0]], unsure[n_frame, CODEC.encode("r")[0]] = 0.6, 0.4
    unsure = unsure.log()
    reading = ("dear lathnop", unsure.argmax(-1).tolist())
    chosen = rescorer.best_path(unsure, [reading])
    assert len(chosen) == unsure.shape[0] and CODEC.decode(collapse(chosen)) == "dear lathrop"
    sure = peaked("dear lathnop", 12.0)
    assert CODEC.decode(collapse(rescorer.best_path(sure, [("dear lathnop", sure.argmax(-1).tolist())]))) == \
        "dear lathnop"
    plain = Rescorer(CODEC, weights, word_model)  # no corrector: the beam's reading
    assert plain.best_path(unsure, [reading]) == reading[1]


def test_scores_add_up_as_documented(word_model) -> None:
    log_probs = peaked("the hat", 8.0)
    weights = Weights(lm_weight=0.0, word_weight=0.5, word_bonus=1.0, oov_penalty=2.0)
    rescorer = Rescorer(CODEC, weights, word_model)
    for text in ("the hat", "the hht"):
        logp, unknown, count = word_model.score(text)
        ctc = line_log_likelihoods(log_probs, [CODEC.encode(text)])[0]
        expected = ctc + 0.5 * logp + 1.0 * count - 2.0 * unknown
        assert rescorer.scores(log_probs, [text])[0] == pytest.approx(expected, abs=1e-4)


def test_the_beam_decoder_corrects_through_its_options(word_model) -> None:
    log_probs = peaked("dear lathnop", 12.0).exp()
    n_frame = 2 * len("dear lath")
    log_probs[n_frame] = 0.0
    log_probs[n_frame, CODEC.encode("n")[0]], log_probs[n_frame, CODEC.encode("r")[0]] = 0.6, 0.4
    log_probs = log_probs.log()
    options = BeamOptions(beam_width=4, word_lm_weight=0.1, word_lm_bonus=0.0, oov_penalty=3.0)
    assert CODEC.decode(collapse(BeamDecoder(CODEC, options, word_model=word_model).best_path(log_probs))) == \
        "dear lathrop"
    off = BeamOptions(beam_width=1, word_lm_weight=0.1, word_lm_bonus=0.0, oov_penalty=3.0, corrections=0)
    assert CODEC.decode(collapse(BeamDecoder(CODEC, off, word_model=word_model).best_path(log_probs))) == \
        "dear lathnop"


def unsure(text: str, frames_and_choices: dict[int, dict[str, float]]) -> torch.Tensor:
    """``peaked(text)`` with some characters' frames split between letters (character index -> probabilities)."""
    probs = peaked(text, 12.0).exp()
    for index, choices in frames_and_choices.items():
        probs[2 * index] = 1e-6
        for letter, p in choices.items():
            probs[2 * index, CODEC.encode(letter)[0]] = p
    return probs.log()


def test_two_unknown_words_are_corrected_together_and_the_rest_of_the_path_kept(word_model) -> None:
    text = "the lettel lathnop"
    log_probs = unsure(text, {9: {"l": 0.6, "r": 0.4}, 15: {"n": 0.6, "r": 0.4}})
    path = log_probs.argmax(-1).tolist()
    assert CODEC.decode(collapse(path)) == text
    weights = Weights(lm_weight=0.0, word_weight=0.0, word_bonus=0.0, oov_penalty=3.0)
    rescorer = Rescorer(CODEC, weights, word_model, corrector=LexiconCorrector(word_model, 12, 2))
    chosen = rescorer.best_path(log_probs, [(text, path)])
    assert CODEC.decode(collapse(chosen)) == "the letter lathrop"
    assert len(chosen) == len(path)
    assert chosen[: 2 * len("the ")] == path[: 2 * len("the ")]  # frames of known words are not touched
