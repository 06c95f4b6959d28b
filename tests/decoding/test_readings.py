"""Three readings per line (text_recognizer.decoding.readings): the copies, the mean, the bundle's second settings."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from PIL import Image

from text_recognizer.decoding.bundle import LanguageModelError, load_bundle, save_bundle
from text_recognizer.decoding.readings import (
    DEFAULT_SHIFT,
    SECTION,
    bundle_for_readings,
    mean_of_readings,
    shift_rows,
    with_shifted_copies,
)
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer, main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lines"
BUNDLE = DEFAULT_CHECKPOINT.with_suffix(".decoder.pt")


def test_shift_rows_moves_ink_and_brings_in_paper() -> None:
    lines = torch.zeros(2, 1, 6, 4)
    lines[:, :, 0] = 1.0  # ink on the top row
    lines[:, :, 5] = 0.5  # and on the bottom row
    down = shift_rows(lines, 2)
    assert down.shape == lines.shape
    assert torch.equal(down[:, :, 2], lines[:, :, 0]) and down[:, :, :2].abs().sum() == 0  # paper came in on top
    assert down[:, :, 5].sum() == 0  # the bottom row's ink left the band
    up = shift_rows(lines, -2)
    assert torch.equal(up[:, :, 3], lines[:, :, 5]) and up[:, :, 4:].abs().sum() == 0
    assert shift_rows(lines, 0) is lines
    assert lines[:, :, 0].sum() == 8  # the input is untouched


def test_copies_come_reading_major_and_the_mean_is_of_probabilities() -> None:
    lines = torch.rand(2, 1, 8, 5)
    copies = with_shifted_copies(lines, 1)
    assert copies.shape == (6, 1, 8, 5)
    assert torch.equal(copies[:2], lines)
    assert torch.equal(copies[2:4], shift_rows(lines, -1)) and torch.equal(copies[4:], shift_rows(lines, 1))
    log_probs = torch.randn(6, 7, 5).log_softmax(-1)  # (3 readings x B=2, T, C)
    mean = mean_of_readings(log_probs, 3)
    assert mean.shape == (2, 7, 5)
    expected = log_probs.exp().reshape(3, 2, 7, 5).mean(0).log()
    assert torch.allclose(mean, expected, atol=1e-6)
    assert torch.allclose(mean.exp().sum(-1), torch.ones(2, 7), atol=1e-5)  # still distributions
    same = torch.cat([log_probs[:2]] * 3)
    assert torch.allclose(mean_of_readings(same, 3), log_probs[:2], atol=1e-6)
    with pytest.raises(ValueError, match="do not split into 3 readings"):
        mean_of_readings(log_probs[:5], 3)


def test_the_bundle_section_decides_settings_and_shift() -> None:
    bundle = {"beam": {"lm_weight": 1.4}, "calibration": {"beam": "single"}}
    assert bundle_for_readings(bundle, 1, "m") == (bundle, 0)
    assert bundle_for_readings(None, 3, "m") == (None, DEFAULT_SHIFT)
    with pytest.raises(ValueError, match="no settings for three readings"):
        bundle_for_readings(bundle, 3, "m")
    with pytest.raises(ValueError, match="readings must be one of"):
        bundle_for_readings(bundle, 2, "m")
    section = {"shift": 3, "beam": {"lm_weight": 1.2}, "calibration": {"beam": "three"}}
    view, shift = bundle_for_readings({**bundle, SECTION: section}, 3, "m")
    assert shift == 3 and view["beam"] == {"lm_weight": 1.2} and view["calibration"] == {"beam": "three"}


@pytest.mark.parametrize("section, problem", [
    ({"shift": 0, "beam": {}, "calibration": {}}, "shift"),
    ({"shift": True, "beam": {}, "calibration": {}}, "shift"),
    ({"shift": 2, "beam": None, "calibration": {}}, "beam"),
    ("three", "must be a dict"),
])
def test_a_bad_section_is_refused_when_the_bundle_loads(tmp_path, section, problem) -> None:
    bundle = load_bundle(BUNDLE)
    path = save_bundle({**bundle, SECTION: section}, tmp_path / "bad.decoder.pt")
    with pytest.raises(LanguageModelError, match=problem):
        load_bundle(path)


def test_the_bundled_model_reads_three_times_as_the_mean_of_its_readings() -> None:
    image = Image.open(FIXTURES / "line_00.png").convert("L")
    once, three = LineRecognizer(), LineRecognizer(readings=3)
    assert once.shift == 0 and three.shift == load_bundle(BUNDLE)[SECTION]["shift"]
    line = once.preprocess(image)  # (1, H, W)
    with torch.inference_mode():
        copies = with_shifted_copies(line[None], three.shift)  # (3, 1, H, W)
        log_probs = once.model(copies, torch.full((3,), line.shape[-1])).float().log_softmax(-1)  # (3, T, C)
    mean = torch.logsumexp(log_probs, 0) - math.log(3)  # (T, C)
    expected = three.decoder.decode(mean, three.geometry(line.shape[-1], image.size))
    got = three.predict_lines([image])[0]
    assert got.text == expected.text
    assert got.confidence == pytest.approx(expected.confidence, abs=1e-5)


def test_three_readings_decode_with_the_bundles_second_settings() -> None:
    section = load_bundle(BUNDLE)[SECTION]
    beam = LineRecognizer(decoder="beam", readings=3)
    assert beam.decoder.options.lm_weight == section["beam"]["lm_weight"]
    assert beam.decoder.calibration == section["calibration"]["beam"]
    assert beam.decoder_for("greedy").calibration == section["calibration"]["greedy"]
    single = LineRecognizer(decoder="beam")
    assert single.decoder.calibration == load_bundle(BUNDLE)["calibration"]["beam"]
    assert single.bundle == beam.bundle  # the recognizer keeps (and exports) the whole bundle


def test_cli_readings_flag(tmp_path, capsys) -> None:
    image = str(FIXTURES / "line_00.png")
    assert main([image, "--readings", "3"]) == 0
    assert capsys.readouterr().out.strip()
    with pytest.raises(SystemExit) as exit_info:
        main([image, "--readings", "2"])
    assert exit_info.value.code == 2
    plain = save_bundle({k: v for k, v in load_bundle(BUNDLE).items() if k != SECTION}, tmp_path / "p.decoder.pt")
    assert main([image, "--readings", "3", "--decoder-bundle", str(plain)]) == 2
    assert "no settings for three readings" in capsys.readouterr().err
