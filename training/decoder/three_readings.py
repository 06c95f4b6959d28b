"""A decoder bundle's second set of beam settings and calibration, for reading each line three times.

Why: tuned on the mean of three readings' posteriors (``text_recognizer.decoding.readings``), settings and
calibration are right for ``--readings 3`` and off for one reading, which stays the default (the beam
decoder's 2x-greedy time budget). So a bundle keeps its single-reading ``beam`` and ``calibration`` and adds
``three_readings = {"shift", "beam", "calibration"}``: either tuned on a cache of three readings
(``python -m training.decoder tune --cache three.pt --three-readings``) or, where that was not worth the
time, copied from the single-reading settings (``python -m training.decoder three-readings``).
"""

from __future__ import annotations

from text_recognizer.decoding.bundle import arpa_text
from text_recognizer.decoding.readings import SECTION, check_three_readings


def with_three_readings(single: dict, three: dict, shift: int) -> dict:
    """``single`` unchanged plus ``three``'s beam settings and calibration as its ``three_readings`` section.

    Both must hold the same language models and name the same model: settings tuned for other LMs or another
    model mean nothing here."""
    if arpa_text(single) != arpa_text(three) or single.get("model_sha256") != three.get("model_sha256"):
        raise ValueError("the two bundles differ in language model or model: tune both from the same bundle and "
                         "model")
    section = {"shift": shift, "beam": three.get("beam") or {}, "calibration": three.get("calibration") or {}}
    check_three_readings(section, "the three-readings settings")
    return {**single, SECTION: section}
