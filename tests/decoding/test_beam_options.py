"""Tests for text_recognizer.decoding.beam_options: the beam settings, checked on construction, and a light module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from text_recognizer.decoding.beam_options import BeamOptions


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"beam_width": 0}, ValueError), ({"beam_width": 2.0}, ValueError), ({"token_beam": 0}, ValueError),
    ({"lm_weight": -1.0}, ValueError), ({"lm_weight": "high"}, TypeError), ({"word_bonus": None}, TypeError),
    ({"threshold": 0.0}, ValueError), ({"word_lm_weight": -0.1}, ValueError), ({"oov_penalty": -1.0}, ValueError),
    ({"word_lm_bonus": "x"}, TypeError), ({"rescore_lm_weight": -0.5}, ValueError),
    ({"blank_penalty": -0.5}, ValueError), ({"blank_penalty": "x"}, TypeError), ({"corrections": -1}, ValueError),
    ({"correction_distance": 1.5}, ValueError), ({"corrections": True}, ValueError),
])
def test_bad_options(kwargs, error) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        BeamOptions(**kwargs)


def test_from_dict_rejects_unknown_names() -> None:
    options = BeamOptions.from_dict({"beam_width": 3, "other": 1}, lm_weight=0.5)
    assert options == BeamOptions(beam_width=3, lm_weight=0.5)
    with pytest.raises(TypeError, match="beam_size"):
        BeamOptions.from_dict(None, beam_size=3)


def test_the_options_and_the_flags_load_without_torch() -> None:
    """Argument parsers (and the batch command's driver) use these without paying for torch."""
    code = ("import sys; import text_recognizer.decoding.beam_options, text_recognizer.decoding.names, "
            "text_recognizer.decoding.options; print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
