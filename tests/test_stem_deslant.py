"""The stem's optional deslanting: slant estimate, shear, ``preprocess(deslant=True)``, and that
positions of words still land in the original image."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from text_recognizer.checkpoint import load_checkpoint
from text_recognizer.decoding.decoder import Geometry
from text_recognizer.models.config import ModelConfig
from text_recognizer.recognizer import DEFAULT_CHECKPOINT, LineRecognizer
from text_recognizer.stem import SLANT_STRENGTH, deslant_line, estimate_slant, preprocess, shear_upright

FIXTURES = Path(__file__).parent / "fixtures" / "lines"


def bars(height: int = 40, width: int = 240) -> np.ndarray:
    """Upright strokes, ink-high: what a perfectly upright hand looks like to the estimator."""
    ink = np.zeros((height, width), np.float32)
    for x in range(16, width - 16, 14):
        ink[4 : height - 4, x : x + 3] = 1.0
    return ink


@pytest.mark.parametrize("lean", [-15.0, 10.0, 25.0])
def test_estimate_recovers_a_known_slant(lean: float) -> None:
    leaning = shear_upright(bars(), -lean)  # shearing upright strokes "back" by -lean makes them lean by lean
    assert estimate_slant(leaning) == pytest.approx(lean, abs=2.5)
    assert estimate_slant(bars()) == pytest.approx(0.0, abs=0.5)


def test_estimate_is_zero_without_strokes() -> None:
    assert estimate_slant(np.zeros((40, 100), np.float32)) == 0.0
    horizontal = np.zeros((40, 100), np.float32)
    horizontal[20:22, 5:95] = 1.0  # a ruled line: no near-vertical edges to vote
    assert estimate_slant(horizontal) == 0.0


def test_shear_pads_both_sides_and_keeps_the_middle_row() -> None:
    ink = bars(41, 200)
    out = shear_upright(ink, 20.0)
    pad = math.ceil(math.tan(math.radians(20.0)) * 20)
    assert out.shape == (41, 200 + 2 * pad)
    np.testing.assert_allclose(out[20, pad : pad + 200], ink[20], atol=1e-6)  # the middle row only moves by pad
    assert out.sum() == pytest.approx(ink.sum(), rel=0.02)  # ink is moved, not lost
    assert shear_upright(ink, 0.0) is ink


def test_deslant_removes_the_chosen_share_of_the_slant() -> None:
    leaning = shear_upright(bars(), -20.0)
    left = estimate_slant(deslant_line(leaning))
    assert left == pytest.approx((1 - SLANT_STRENGTH) * 20.0, abs=2.5)
    assert estimate_slant(deslant_line(leaning, strength=1.0)) == pytest.approx(0.0, abs=2.5)


def test_preprocess_with_deslant_is_ink_high_deterministic_and_polarity_free() -> None:
    image = Image.open(FIXTURES / "line_01.png").convert("L")  # a real line: dark ink on light paper
    plain = preprocess(image, 40)
    tensor = preprocess(image, 40, deslant=True)
    assert tensor.shape[:2] == (1, 40) and tensor.dtype == torch.float32
    assert (tensor.shape[2] - plain.shape[2]) % 2 == 0 and tensor.shape[2] >= plain.shape[2]
    assert 0.0 <= float(tensor.min()) and float(tensor.max()) <= 1.0
    assert float(tensor.sum()) == pytest.approx(float(plain.sum()), rel=0.03)
    assert torch.equal(tensor, preprocess(image, 40, deslant=True))
    inverted = Image.fromarray(255 - np.asarray(image.convert("L")))
    assert torch.allclose(preprocess(inverted, 40, deslant=True), tensor, atol=0.02)
    assert torch.equal(preprocess(image, 40), plain)  # off by default: the stem as before
    blank = preprocess(Image.new("L", (300, 60), 255), 40, deslant=True)
    assert float(blank.abs().sum()) == 0.0


def test_centred_geometry_takes_the_padding_off_positions() -> None:
    # a 200 x 40 original read at height 40: resized width 200; deslanting added 12 columns per side
    plain = Geometry.for_line(40, 16, 4, 200, (200, 40))
    centred = Geometry.for_line(40, 16, 4, 224, (200, 40), centred=True)
    assert centred.offset == 12.0 and plain.offset == 0.0
    assert centred.x_range(3 + 5, 3 + 7) == plain.x_range(5, 7)  # 12 columns = 3 frames of stride 4
    assert centred.x_range(0, 0)[0] == 0.0  # padding columns map to the image's left edge, never below it
    assert Geometry.for_line(40, 16, 4, 224, (200, 40)).offset == 0.0  # right padding: no offset


def test_model_config_keeps_the_setting_and_old_checkpoints_read_without_it() -> None:
    config = ModelConfig(deslant=True)
    assert ModelConfig.from_dict(config.to_dict()).deslant is True
    old = config.to_dict()
    del old["deslant"]
    assert ModelConfig.from_dict(old).deslant is False


def test_recognizer_deslants_when_its_checkpoint_says_so(tmp_path) -> None:
    """The same weights with the setting switched on: the stem output is sheared, words stay inside
    the image and in reading order, and the text of a fixture line is still read."""
    checkpoint = torch.load(DEFAULT_CHECKPOINT, map_location="cpu", weights_only=False)
    for value in (False, True):
        checkpoint["model_config"]["deslant"] = value
        torch.save(checkpoint, tmp_path / f"deslant_{value}.pt")
    assert load_checkpoint(tmp_path / "deslant_True.pt").model_config.deslant is True
    plain, sheared = LineRecognizer(tmp_path / "deslant_False.pt"), LineRecognizer(tmp_path / "deslant_True.pt")
    image = Image.open(FIXTURES / "line_00.png").convert("L")
    assert sheared.preprocess(image).shape[-1] >= plain.preprocess(image).shape[-1]
    a, b = plain.predict_lines([image])[0], sheared.predict_lines([image])[0]
    assert b.text and b.words
    assert [s.start for s in b.chars] == sorted(s.start for s in b.chars)
    assert all(0 <= s.start < s.end <= image.width for s in b.words + b.chars)
    if a.text == b.text:  # same reading: the same words, at nearly the same places in the original image
        for wa, wb in zip(a.words, b.words):
            assert abs(wa.start - wb.start) <= 0.05 * image.width
