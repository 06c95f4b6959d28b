"""Tests for text_recognizer.decoding.calibration: logistic calibration and its measures."""

from __future__ import annotations

import math

import pytest
import torch

from text_recognizer.decoding import calibration as cal


def test_fit_recovers_a_known_logistic_map() -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(20000, generator=generator) * 2
    p = torch.sigmoid(1.5 * x - 0.5)
    y = (torch.rand(20000, generator=generator) < p).double()
    model = cal.fit([[v] for v in x.tolist()], y.tolist())
    assert model["weights"][0] == pytest.approx(1.5, abs=0.1)
    assert model["bias"] == pytest.approx(-0.5, abs=0.1)
    confidences = [cal.apply(model, [v]) for v in x.tolist()]
    assert cal.expected_calibration_error(confidences, y.tolist()) < 0.02
    # the raw sigmoid(x) is badly calibrated for these outcomes
    assert cal.expected_calibration_error(torch.sigmoid(x).tolist(), y.tolist()) > 0.05


def test_fit_accepts_fractional_targets() -> None:
    model = cal.fit([[0.0], [1.0], [2.0], [3.0]], [0.2, 0.4, 0.6, 0.8])
    assert cal.apply(model, [0.0]) < cal.apply(model, [3.0])


def test_reliability_table_and_ece() -> None:
    rows = cal.reliability_table([0.05, 0.15, 0.95, 1.0], [0, 0, 1, 1], bins=10)
    assert [row["n"] for row in rows] == [1, 1, 2]
    assert rows[-1]["accuracy"] == 1.0
    assert cal.expected_calibration_error([0.9, 0.9], [1, 0]) == pytest.approx(0.4)


def test_correctness_alignment() -> None:
    assert cal.word_correctness("the cat sat", "the bat sat down") == [True, False, True, False]
    assert cal.word_correctness("", "a") == [False]
    assert cal.char_correctness("abc", "abxc") == [True, True, False, True]


def test_apply_matches_sigmoid() -> None:
    assert cal.apply({"weights": [2.0], "bias": 1.0}, [0.5]) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert cal.apply({"weights": [1.0], "bias": 0.0}, [1e6]) == pytest.approx(1.0)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: cal.apply({"weights": [1.0]}, [1.0]), "calibration"),
    (lambda: cal.apply({"weights": [1.0], "bias": 0}, [1.0, 2.0]), "features"),
    (lambda: cal.fit([[1.0]], [1.0]), "features"),
    (lambda: cal.fit([[1.0], [2.0]], [0.0, 2.0]), "targets"),
    (lambda: cal.reliability_table([0.5], [1, 0]), "length"),
    (lambda: cal.expected_calibration_error([], []), "no items"),
])
def test_bad_arguments(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()
