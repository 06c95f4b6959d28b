"""``argparse`` types the command-line tools share (a number above 0, a whole number of at least 1).

Why a module of its own: the batch command's driver parses its flags without importing torch, which the recognizer's
module (where these were first written) loads.
"""

from __future__ import annotations

import argparse


def positive_float(text: str) -> float:
    """An argparse type: a number above 0 (the batch command's flags use it too)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value
