"""Tests for text_recognizer.decoding.greedy: greedy CTC decoding."""

from __future__ import annotations

import math

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.decoding.greedy import DecodedLine, collapse, ctc_decode

CODEC = Codec("abc")  # a=1, b=2, c=3, blank=0


def peaked(ids: list[list[int]], num_classes: int = 4, peak: float = 30.0) -> torch.Tensor:
    """Logits ``(B, T, C)`` that put (almost) all mass on the given id per frame."""
    logits = torch.zeros(len(ids), len(ids[0]), num_classes)
    for b, row in enumerate(ids):
        for t, i in enumerate(row):
            logits[b, t, i] = peak
    return logits


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        ([], []),
        ([0, 0, 0], []),
        ([1], [1]),
        ([1, 1, 1], [1]),
        ([1, 0, 1], [1, 1]),  # a blank between repeats keeps a double letter
        ([1, 1, 0, 1, 2, 2], [1, 1, 2]),
        ([0, 1, 2, 0, 2, 3, 3, 0], [1, 2, 2, 3]),
        ([1, 2, 1, 2], [1, 2, 1, 2]),
        ([0, 0, 1, 0, 0], [1]),
    ],
)
def test_collapse(ids: list[int], expected: list[int]) -> None:
    assert collapse(ids) == expected


def test_collapse_other_blank() -> None:
    assert collapse([3, 1, 1, 3, 1], blank=3) == [1, 1]


def test_decode_returns_strings_and_collapses() -> None:
    logits = peaked([[1, 1, 0, 1, 2, 2, 0, 3], [0, 0, 0, 0, 0, 0, 0, 0]])
    lines = ctc_decode(logits, CODEC)
    assert len(lines) == 2
    assert all(isinstance(line, DecodedLine) for line in lines)
    assert [line.text for line in lines] == ["aabc", ""]
    assert all(type(line.text) is str and type(line.confidence) is float for line in lines)


def test_lengths_ignore_frames_past_the_length() -> None:
    logits = peaked([[1, 0, 2, 3, 3], [3, 2, 1, 1, 2]])
    lines = ctc_decode(logits, CODEC, lengths=torch.tensor([2, 4]))
    assert [line.text for line in lines] == ["a", "cba"]
    # a zero length decodes to an empty line with zero confidence
    empty = ctc_decode(logits, CODEC, lengths=torch.tensor([0, 5]))
    assert empty[0].text == "" and empty[0].confidence == 0.0
    assert empty[1].text == "cbab"


def test_lengths_exclude_uncertain_padding_from_confidence() -> None:
    logits = peaked([[1, 2, 0, 0]])
    logits[0, 2:] = 0.0  # uniform past the length: would drag the confidence down
    full = ctc_decode(logits, CODEC)[0].confidence
    cut = ctc_decode(logits, CODEC, lengths=torch.tensor([2]))[0].confidence
    assert cut > 0.99
    assert full < 0.6


def test_no_collapse_mode_keeps_repeats_and_drops_padding() -> None:
    logits = peaked([[1, 1, 0, 2, 2, 2, 0, 0]])
    assert ctc_decode(logits, CODEC, collapse_repeats=False)[0].text == "aabbb"
    assert ctc_decode(logits, CODEC)[0].text == "ab"


def test_confidence_in_unit_interval() -> None:
    torch.manual_seed(0)
    logits = torch.randn(5, 12, 4) * 3
    lines = ctc_decode(logits, CODEC)
    for b, line in enumerate(lines):
        assert 0.0 <= line.confidence <= 1.0
        expected = logits[b].log_softmax(-1).max(-1).values.mean().exp().item()
        assert line.confidence == pytest.approx(expected, rel=1e-5)


def test_confidence_near_one_for_peaked_and_low_for_flat() -> None:
    sure = ctc_decode(peaked([[1, 0, 2, 0, 3]]), CODEC)[0]
    assert sure.text == "abc"
    assert sure.confidence > 0.999
    flat = ctc_decode(torch.zeros(1, 5, 4), CODEC)[0]
    assert flat.confidence == pytest.approx(0.25)


def test_log_probabilities_decode_like_logits() -> None:
    torch.manual_seed(1)
    logits = torch.randn(3, 9, 4)
    a = ctc_decode(logits, CODEC)
    b = ctc_decode(logits.log_softmax(-1), CODEC)
    assert [x.text for x in a] == [x.text for x in b]
    for x, y in zip(a, b):
        assert math.isclose(x.confidence, y.confidence, rel_tol=1e-5)


def test_half_precision_logits() -> None:
    logits = peaked([[1, 0, 1, 2]]).to(torch.bfloat16)
    assert ctc_decode(logits, CODEC)[0].text == "aab"


def test_class_count_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="5 classes but the codec has 4"):
        ctc_decode(torch.zeros(1, 3, 5), CODEC)


def test_wrong_dims_raise() -> None:
    with pytest.raises(ValueError, match=r"\(B, T, C\)"):
        ctc_decode(torch.zeros(3, 4), CODEC)


def test_empty_time_axis() -> None:
    lines = ctc_decode(torch.zeros(2, 0, 4), CODEC)
    assert [(line.text, line.confidence) for line in lines] == [("", 0.0), ("", 0.0)]
