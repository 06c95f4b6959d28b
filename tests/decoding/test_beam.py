"""Tests for text_recognizer.decoding.beam: flashlight beam search with and without a character LM."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.beam import BeamDecoder, BeamOptions
from text_recognizer.decoding.bundle import LanguageModelError
from text_recognizer.decoding.greedy import collapse
from text_recognizer.decoding.lm_builder import build_arpa
from text_recognizer.decoding.word_lm import WordLanguageModel, build_word_arpa

CODEC = Codec(" ceht")  # blank 0, space 1, c 2, e 3, h 4, t 5


def peaked_log_probs(path: list[int], peak: float = 12.0) -> torch.Tensor:
    logits = torch.zeros(len(path), CODEC.num_classes)
    logits[torch.arange(len(path)), torch.tensor(path)] = peak
    return logits.log_softmax(-1)  # (T, C)


def test_beam_without_lm_equals_greedy_on_peaked_outputs() -> None:
    generator = torch.Generator().manual_seed(0)
    decoder = BeamDecoder(CODEC, BeamOptions(beam_width=4))
    for _ in range(20):
        path = torch.randint(0, CODEC.num_classes, (15,), generator=generator).tolist()
        best = decoder.best_path(peaked_log_probs(path))
        assert collapse(best) == collapse(path)


def ambiguous_the() -> torch.Tensor:
    """'th?' where the model slightly prefers 'c' over 'e' for the last letter."""
    path = [5, 0, 4, 0, 2, 0]
    log_probs = peaked_log_probs(path).exp()
    log_probs[4] = 0.0
    log_probs[4, 2], log_probs[4, 3], log_probs[4, 0] = 0.5, 0.45, 0.05
    return log_probs.log()


def test_language_model_turns_thc_into_the() -> None:
    arpa = build_arpa(["the the the", "the teeth the"] * 5, CODEC, order=3)
    log_probs = ambiguous_the()
    greedy = CODEC.decode(collapse(log_probs.argmax(-1).tolist()))
    without_lm = BeamDecoder(CODEC, BeamOptions(beam_width=8, lm_weight=1.0, word_bonus=0.0))
    with_lm = BeamDecoder(CODEC, BeamOptions(beam_width=8, lm_weight=1.0, word_bonus=0.0), arpa)
    assert greedy == "thc"
    assert CODEC.decode(collapse(without_lm.best_path(log_probs))) == "thc"
    assert with_lm.has_lm and not without_lm.has_lm
    assert CODEC.decode(collapse(with_lm.best_path(log_probs))) == "the"


def test_an_alphabet_that_writes_a_pipe_decodes_with_the_alternate_space_token() -> None:
    codec = Codec(" ceht|")  # as the Latin alphabet: | is a character, so the LM's spaces are ▁
    arpa = build_arpa(["the the the", "the teeth the"] * 5, codec, order=3)
    log_probs = torch.cat([ambiguous_the(), torch.full((6, 1), -30.0)], dim=1).log_softmax(-1)  # (T, C + 1)
    with_lm = BeamDecoder(codec, BeamOptions(beam_width=8, lm_weight=1.0, word_bonus=0.0), arpa)
    assert codec.decode(collapse(with_lm.best_path(log_probs))) == "the"


def test_word_language_model_rescores_the_final_beam() -> None:
    """No character LM: the search ends on 'thc'; a word model that knows 'the' picks the other reading."""
    word_model = WordLanguageModel(build_word_arpa(["the the the", "the tee"] * 3, order=2, min_count=1))
    log_probs = ambiguous_the()
    options = BeamOptions(beam_width=8, word_lm_weight=1.0, word_lm_bonus=0.0, oov_penalty=1.0, corrections=0)
    rescored = BeamDecoder(CODEC, options, word_model=word_model)
    assert rescored.word_lm is not None and rescored.rescorer.corrector is None
    best = rescored.best_path(log_probs)
    assert len(best) == log_probs.shape[0] and CODEC.decode(collapse(best)) == "the"
    off = BeamDecoder(CODEC, BeamOptions(beam_width=8, word_lm_weight=0.0), word_model=word_model)
    assert off.word_lm is None and CODEC.decode(collapse(off.best_path(log_probs))) == "thc"
    assert BeamDecoder(CODEC, options).rescorer is None  # no word model, nothing to re-score with


def faint_e() -> torch.Tensor:
    """'th' then a frame where the model prefers blank (0.6) to a faint 'e' (0.4)."""
    log_probs = peaked_log_probs([5, 0, 4, 0, 3, 0]).exp()
    log_probs[4] = 0.0
    log_probs[4, 0], log_probs[4, 3] = 0.6, 0.4
    return log_probs.log()


def test_blank_penalty_keeps_faint_characters_when_a_language_model_is_used() -> None:
    word_model = WordLanguageModel(build_word_arpa(["the th", "th the"] * 3, order=2, min_count=1))
    neutral = {"beam_width": 8, "word_lm_weight": 1e-6, "word_lm_bonus": 0.0, "oov_penalty": 0.0, "corrections": 0}
    log_probs = faint_e()
    before = log_probs.clone()

    def read(decoder: BeamDecoder) -> str:
        return CODEC.decode(collapse(decoder.best_path(log_probs)))

    assert read(BeamDecoder(CODEC, BeamOptions(**neutral, blank_penalty=0.0), word_model=word_model)) == "th"
    assert read(BeamDecoder(CODEC, BeamOptions(**neutral, blank_penalty=1.5), word_model=word_model)) == "the"
    assert read(BeamDecoder(CODEC, BeamOptions(**neutral, blank_penalty=0.3), word_model=word_model)) == "th"
    assert read(BeamDecoder(CODEC, BeamOptions(beam_width=8, blank_penalty=1.5))) == "th"  # no LM: the model's reading
    assert torch.equal(log_probs, before)  # the caller's log-probabilities are not changed


def test_path_has_one_class_per_frame() -> None:
    log_probs = ambiguous_the()
    assert len(BeamDecoder(CODEC).best_path(log_probs)) == log_probs.shape[0]
    assert BeamDecoder(CODEC).best_path(torch.zeros(0, CODEC.num_classes)) == []


def test_bad_inputs() -> None:
    decoder = BeamDecoder(CODEC)
    with pytest.raises(ValueError, match="log_probs"):
        decoder.best_path(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="codec"):
        BeamDecoder("abc")
    with pytest.raises(LanguageModelError, match="KenLM"):
        BeamDecoder(CODEC, BeamOptions(), "not an arpa file")
