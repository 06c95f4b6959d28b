"""Tests for text_recognizer.decoding.decoder: greedy/beam line decoding with positions and confidences."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.bundle import make_bundle, word_lm_entry
from text_recognizer.decoding.decoder import Geometry, LineDecoder, line_features, runs
from text_recognizer.decoding.lm_builder import build_arpa
from text_recognizer.decoding.word_lm import build_word_arpa

CODEC = Codec(" abc")  # blank 0, space 1, a 2, b 3, c 4


def peaked_log_probs(path: list[int], peak: float = 12.0) -> torch.Tensor:
    logits = torch.zeros(len(path), CODEC.num_classes)
    logits[torch.arange(len(path)), torch.tensor(path)] = peak
    return logits.log_softmax(-1)


def test_runs() -> None:
    assert runs([0, 2, 2, 0, 2, 1, 3, 3, 3, 0]) == [(2, 1, 2), (2, 4, 4), (1, 5, 5), (3, 6, 8)]
    assert runs([]) == []


# "ab ca" on known frames: a@1-2, b@4, space@6, c@8-9, a@11
PATH = [0, 2, 2, 0, 3, 0, 1, 0, 4, 4, 0, 2, 0]


@pytest.mark.parametrize("decoder", ["greedy", "beam"])
def test_words_chars_and_positions(decoder: str) -> None:
    geometry = Geometry(window_width=16, stride=4, scale=2.0, image_width=110.0)
    line = LineDecoder(CODEC, decoder).decode(peaked_log_probs(PATH), geometry)
    assert line.text == "ab ca"
    assert [w.text for w in line.words] == ["ab", "ca"]
    assert [c.text for c in line.chars] == ["a", "b", "c", "a"]
    assert [(c.first_frame, c.last_frame) for c in line.chars] == [(1, 2), (4, 4), (8, 9), (11, 11)]
    # frame t saw stem pixels [4t, 4t + 16), i.e. original pixels [8t, 8t + 32), clipped to the image
    assert [(c.start, c.end) for c in line.chars] == [(8, 48), (32, 64), (64, 104), (88, 110)]
    assert (line.words[0].start, line.words[0].end) == (8, 64)
    starts = [c.start for c in line.chars]
    assert starts == sorted(starts) and all(0 <= c.start < c.end <= 110 for c in line.chars)
    assert all(0.99 < x.confidence <= 1.0 for x in (*line.chars, *line.words)) and 0.99 < line.confidence <= 1


def test_uncertain_character_lowers_its_word_only() -> None:
    log_probs = peaked_log_probs(PATH).exp()
    log_probs[11] = torch.tensor([0.1, 0.0, 0.6, 0.3, 0.0])  # the last 'a' is unsure
    line = LineDecoder(CODEC, "greedy").decode(log_probs.clamp_min(1e-9).log(), Geometry(16, 4))
    assert line.chars[-1].confidence == pytest.approx(0.6, abs=1e-3)
    assert line.words[1].confidence < 0.7 < line.words[0].confidence


def test_calibration_from_the_bundle_is_applied() -> None:
    calibration = {"greedy": {"char": {"weights": [0.0, 0.0], "bias": 0.0}, "word": {"weights": [0.0] * 4, "bias": 0.0},
                              "line": {"weights": [0.0] * 3, "bias": 0.0}}}
    bundle = make_bundle(None, CODEC, None, "test", calibration=calibration)
    line = LineDecoder(CODEC, "greedy", bundle).decode(peaked_log_probs(PATH), Geometry(16, 4))
    assert {x.confidence for x in (*line.chars, *line.words)} == {0.5} and line.confidence == 0.5


def test_beam_uses_the_bundles_language_model() -> None:
    bundle = make_bundle(build_arpa(["ab ca"] * 3, CODEC, 3), CODEC, 3, "test", beam={"beam_width": 4})
    assert LineDecoder(CODEC, "beam", bundle).has_lm
    assert not LineDecoder(CODEC, "beam", bundle, use_lm=False).has_lm
    assert LineDecoder(CODEC, "beam", bundle).options.beam_width == 4
    assert LineDecoder(CODEC, "beam", bundle, beam_width=2).options.beam_width == 2


def test_beam_uses_the_bundles_word_lm_and_lexicon() -> None:
    words = build_word_arpa(["ab ca", "ca ab"] * 3, 2, 1)
    bundle = make_bundle(build_arpa(["ab ca"] * 3, CODEC, 3), CODEC, 3, "test",
                         word_lm=word_lm_entry(words, 2, 1, "test", ["cab"], "list"))
    model = LineDecoder(CODEC, "beam", bundle).beam.word_lm
    assert model is not None and model.score("cab ab")[1] == 0 and model.score("bac")[1] == 1
    assert LineDecoder(CODEC, "beam", bundle, word_lm_weight=0.0).beam.word_lm is None
    assert LineDecoder(CODEC, "beam", bundle, use_lm=False).beam.word_lm is None
    assert LineDecoder(CODEC, "beam", make_bundle(None, CODEC, None, "test")).beam.word_lm is None


def test_empty_line() -> None:
    line = LineDecoder(CODEC, "greedy").decode(torch.zeros(0, CODEC.num_classes), Geometry(16, 4))
    assert line.text == "" and line.words == () and line.confidence < 1e-6


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="decoder"):
        LineDecoder(CODEC, "viterbi")
    with pytest.raises(TypeError, match="codec"):
        LineDecoder("abc")
    with pytest.raises(ValueError, match="beam"):
        LineDecoder(CODEC, "greedy", beam_width=3)
    with pytest.raises(ValueError, match="log_probs"):
        LineDecoder(CODEC).decode(torch.zeros(3, 7), Geometry(16, 4))


def test_line_features_score_every_run_by_its_own_frames() -> None:
    """The vectorised per-run scores equal each run's frames read one by one (max log p, max margin)."""
    generator = torch.Generator().manual_seed(3)
    for frames in (1, 2, 7, 60):
        log_probs = torch.randn(frames, 6, generator=generator).log_softmax(-1)  # (T, C)
        # blanks, single-frame runs, a character repeated across a blank and adjacent different characters
        path = torch.randint(0, 6, (frames,), generator=generator).tolist()
        raw = line_features(path, log_probs)
        best = log_probs.max(-1).values  # (T,)
        expected = [(i, first, last, float(log_probs[first : last + 1, i].max()),
                     float((log_probs[first : last + 1, i] - best[first : last + 1]).max()))
                    for i, first, last in runs(path)]
        assert [c[:3] for c in raw["chars"]] == [c[:3] for c in expected]
        assert [c[3:] for c in raw["chars"]] == [pytest.approx(c[3:], abs=1e-6) for c in expected]
        assert raw["mean_best"] == pytest.approx(float(best.mean()), abs=1e-6)
    assert line_features([], torch.zeros(0, 6)) == {"chars": [], "mean_best": -50.0}
    assert line_features([0, 0, 0], torch.zeros(3, 6).log_softmax(-1))["chars"] == []
