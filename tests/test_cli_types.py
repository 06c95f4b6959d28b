"""Tests for text_recognizer.cli_types: the shared argparse types say what is wrong."""

from __future__ import annotations

import argparse

import pytest

from text_recognizer.cli_types import positive_float, positive_int


def test_positive_numbers_pass_and_others_are_explained() -> None:
    assert positive_int("3") == 3 and positive_float("0.5") == 0.5
    for bad, message in (("0", "positive integer, got 0"), ("2.5", "expected a positive integer"),
                         ("many", "positive integer, got 'many'")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            positive_int(bad)
    for bad, message in (("0", "positive number"), ("-1", "positive number"), ("nan", "positive number"),
                         ("x", "expected a number")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            positive_float(bad)
