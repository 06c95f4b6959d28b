"""Reading a line three times: as it is, moved up and moved down, with the posteriors averaged.

Why: the model learned IAM's vertical placement of the writing in the stem's 40-px band; a hand that sits
a little higher or lower (1905 cursive, a photo cut loosely) is read better by the mean of the character
probabilities over the line and two copies moved a few pixels up and down (test-time augmentation, no new
weights). Measured in ``benchmarks/tta_probe.py`` (benchmarks/RESULTS.md, "Reading each line three
times"): fewer errors greedy and with the language models, at three runs of the model. That is over the
beam decoder's 2x-greedy time budget, so one reading stays the default and three is an option
(``LineRecognizer(readings=3)`` or per call, ``--readings 3``, the API's ``?readings=3`` and
``TEXT_RECOGNIZER_READINGS``).

The averaged posteriors are smoother than one reading's, so the beam settings and the confidence
calibration tuned on single readings would be off for them: a decoder bundle carries a second set for
three readings, ``bundle["three_readings"] = {"shift": px, "beam": {...}, "calibration": {...}}``
(``python -m training.decoder tune --three-readings``). The copies keep the line's width, so the frames of the three
readings line up and their log-probabilities can be averaged frame by frame.
"""

from __future__ import annotations

import math

import torch

from text_recognizer.decoding.names import READINGS

#: Pixels the copies move by when there is no bundle to say (measured on the 40-px bundled model).
DEFAULT_SHIFT = 2

#: Largest shift a bundle may ask for, in the model's input pixels (a quarter of a 40-px line height).
MAX_SHIFT = 10

SECTION = "three_readings"


def check_three_readings(section: object, where: str) -> None:
    """``ValueError`` unless ``section`` is ``{"shift": 1..MAX_SHIFT, "beam": dict, "calibration": dict}``."""
    if not isinstance(section, dict):
        raise ValueError(f"{where}: {SECTION!r} must be a dict, got {type(section).__name__}")
    shift = section.get("shift")
    if not isinstance(shift, int) or isinstance(shift, bool) or not 1 <= shift <= MAX_SHIFT:
        raise ValueError(f"{where}: {SECTION}['shift'] must be 1-{MAX_SHIFT} pixels, got {shift!r}")
    for key in ("beam", "calibration"):
        if not isinstance(section.get(key), dict):
            raise ValueError(f"{where}: {SECTION}[{key!r}] must be a dict of settings")


def available_readings(bundle: dict | None) -> tuple[int, ...]:
    """Readings per line a recognizer with ``bundle`` can decode with: 3 needs the bundle's settings for it
    (or no bundle at all: greedy, raw confidences)."""
    return tuple(r for r in READINGS if r == 1 or bundle is None or SECTION in bundle)


def bundle_for_readings(bundle: dict | None, readings: int, where: str) -> tuple[dict | None, int]:
    """The decoder bundle to decode ``readings`` readings with, and the shift of the copies (0: one reading).

    Three readings decode with the bundle's ``three_readings`` beam settings and calibration; without a
    bundle (greedy, raw confidences) the copies move ``DEFAULT_SHIFT`` pixels.
    """
    if readings not in READINGS:
        raise ValueError(f"readings must be one of {READINGS}, got {readings!r}")
    if readings == 1:
        return bundle, 0
    if bundle is None:
        return None, DEFAULT_SHIFT
    if readings not in available_readings(bundle):
        raise ValueError(f"{where}: its decoder bundle has no settings for three readings "
                         "(python -m training.decoder tune --three-readings adds them); use readings=1")
    section = bundle[SECTION]
    return {**bundle, "beam": section["beam"], "calibration": section["calibration"]}, section["shift"]


def shift_rows(lines: torch.Tensor, rows: int) -> torch.Tensor:
    """``(B, 1, H, W)`` ink-high lines moved ``rows`` down (< 0: up); paper (0) comes in at the edge."""
    if rows == 0:
        return lines
    moved = torch.roll(lines, rows, dims=2)
    if rows > 0:
        moved[:, :, :rows] = 0
    else:
        moved[:, :, rows:] = 0
    return moved


def with_shifted_copies(lines: torch.Tensor, shift: int) -> torch.Tensor:
    """``(B, 1, H, W)`` -> ``(3B, 1, H, W)``: the lines, then moved ``shift`` px up, then down."""
    return torch.cat([lines, shift_rows(lines, -shift), shift_rows(lines, shift)])


def mean_of_readings(log_probs: torch.Tensor, readings: int) -> torch.Tensor:
    """``(readings * B, T, C)`` log-probabilities, reading-major -> ``(B, T, C)``: log of the mean probability."""
    if log_probs.shape[0] % readings:
        raise ValueError(f"{log_probs.shape[0]} rows do not split into {readings} readings")
    stacked = log_probs.reshape(readings, -1, *log_probs.shape[1:])  # (readings, B, T, C)
    return torch.logsumexp(stacked, 0) - math.log(readings)
