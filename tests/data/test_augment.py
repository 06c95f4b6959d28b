"""Training augmentation: conventions (PIL in/out, dark ink on light), every op, determinism, speed."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from text_recognizer.data.augment import AugmentConfig, LineAugmentation, build_augmentation
from text_recognizer.stem import preprocess

OPS = {  # probability field -> the op it switches on
    "stretch_p": "WidthStretch",
    "shear_p": "SlantRotate",
    "rotate_p": "SlantRotate",
    "elastic_p": "Elastic",
    "morph_p": "Morphology",
    "ink_p": "InkAndPaper",
    "paper_p": "InkAndPaper",
    "ruled_p": "InkAndPaper",
    "margin_p": "Surroundings",
    "neighbour_p": "Surroundings",
    "contrast_p": "BrightnessContrast",
    "blur_p": "Blur",
    "noise_p": "Noise",
    "jpeg_p": "Jpeg",
}


def _line(width: int = 600, height: int = 64) -> Image.Image:
    """Binarised 'handwriting' like the development data: black strokes on white."""
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    for x in range(10, width - 30, 22):
        draw.line([(x, 48), (x + 8, 14), (x + 16, 48)], fill=0, width=4)
    return image


def _ink_overlap(a: Image.Image, b: Image.Image) -> float:
    """Correlation of the two images' ink after the stem (same width)."""
    ia, ib = preprocess(a, 64)[0], preprocess(b.resize(a.size), 64)[0]
    return float(torch.corrcoef(torch.stack([ia.flatten(), ib.flatten()]))[0, 1])


def test_default_pipeline_conventions() -> None:
    augment = build_augmentation(generator=torch.Generator().manual_seed(0))
    assert isinstance(augment, LineAugmentation)
    source = _line()
    for _ in range(20):
        out = augment(source)
        assert isinstance(out, Image.Image) and out.mode == "L"
        a = np.asarray(out)
        assert np.median(a) > a.mean() - 1 and np.median(a) > 120  # light paper dominates, ink is dark
        ink = preprocess(out, 64)
        assert ink.shape[1] == 64 and float(ink.mean()) > 0.03  # the text survives the stem


@pytest.mark.parametrize("field", sorted(OPS))
def test_each_op_changes_the_image_and_keeps_the_text(field: str) -> None:
    config = dataclasses.replace(AugmentConfig.off(), **{field: 1.0})
    augment = build_augmentation(config, torch.Generator().manual_seed(1))
    source = _line()
    out = augment(source)
    assert out.mode == "L"
    assert out.size != source.size or not np.array_equal(np.asarray(out), np.asarray(source)), OPS[field]
    if field in ("margin_p", "neighbour_p"):  # the canvas grows vertically; the line is kept verbatim inside
        return
    assert _ink_overlap(source, out) > (0.3 if field in ("elastic_p", "shear_p", "rotate_p", "stretch_p") else 0.8)


@pytest.mark.parametrize("seed", range(6))
def test_surroundings_keep_the_line_verbatim_and_add_paper_or_strokes(seed: int) -> None:
    config = dataclasses.replace(AugmentConfig.off(), margin_p=1.0, neighbour_p=1.0)
    source = _line()
    draw = ImageDraw.Draw(source)
    for x in range(20, 580, 40):  # ascenders and descenders reach the crop's edges, as in real lines
        draw.line([(x, 0), (x, 63)], fill=0, width=3)
    out = build_augmentation(config, torch.Generator().manual_seed(seed))(source)
    again = build_augmentation(config, torch.Generator().manual_seed(seed))(source)
    assert np.array_equal(np.asarray(out), np.asarray(again))  # deterministic per seed
    a, s = np.asarray(out), np.asarray(source)
    assert a.shape[1] == s.shape[1] and a.shape[0] > s.shape[0]
    # the original rows appear unchanged somewhere in the taller crop
    rows = [y for y in range(a.shape[0] - s.shape[0] + 1) if np.array_equal(a[y : y + s.shape[0]], s)]
    assert rows, "the line itself must survive verbatim"
    top = rows[0]
    assert top > 0 and (a[:top] < 128).any()  # a fragment of the line above: dark strokes
    assert (a[top + s.shape[0] :] < 128).any()  # and of the line below
    # polarity: paper still dominates, ink dark
    assert np.median(a) == 255 and preprocess(out, 64).shape[1] == 64


def test_margins_alone_add_only_paper() -> None:
    config = dataclasses.replace(AugmentConfig.off(), margin_p=1.0, margin=(0.3, 0.3))
    source = _line()
    a = np.asarray(build_augmentation(config, torch.Generator().manual_seed(0))(source))
    pad = round(0.3 * source.height)
    assert a.shape[0] == source.height + 2 * pad
    assert (a[:pad] == 255).all() and (a[-pad:] == 255).all()
    assert np.array_equal(a[pad : pad + source.height], np.asarray(source))


def test_off_is_identity_and_any_mode_is_accepted() -> None:
    augment = build_augmentation(AugmentConfig.off())
    source = _line()
    assert np.array_equal(np.asarray(augment(source)), np.asarray(source))
    assert augment(source.convert("RGB")).mode == "L"
    with pytest.raises(TypeError, match="PIL"):
        augment(np.zeros((4, 4)))


def test_apply_p_shows_a_share_of_lines_clean() -> None:
    source = _line()
    clean = np.asarray(source)
    never = build_augmentation(AugmentConfig(apply_p=0.0), torch.Generator().manual_seed(0))
    assert all(np.array_equal(np.asarray(never(source)), clean) for _ in range(5))
    half = build_augmentation(AugmentConfig(apply_p=0.5), torch.Generator().manual_seed(0))
    unchanged = sum(np.array_equal(np.asarray(out), clean) for out in (half(source) for _ in range(40)))
    assert 8 <= unchanged <= 32  # about half, and never all or none
    with pytest.raises(ValueError, match="apply_p"):
        AugmentConfig(apply_p=1.5)


def test_deterministic_with_a_seeded_generator() -> None:
    source = _line()
    a = [np.asarray(build_augmentation(generator=torch.Generator().manual_seed(7))(source)) for _ in range(2)]
    assert np.array_equal(a[0], a[1])
    torch.manual_seed(3)
    b = build_augmentation()(source)
    torch.manual_seed(3)
    assert np.array_equal(np.asarray(build_augmentation()(source)), np.asarray(b))
    draws = build_augmentation(generator=torch.Generator().manual_seed(7))
    assert not np.array_equal(np.asarray(draws(source)), np.asarray(draws(source)))


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="blur_p"):
        AugmentConfig(blur_p=1.5)
    with pytest.raises(ValueError, match="shear"):
        AugmentConfig(shear=(5.0, -5.0))


def test_speed() -> None:
    augment = build_augmentation(generator=torch.Generator().manual_seed(0))
    source = _line(900)
    augment(source)
    start = time.process_time()
    for _ in range(30):
        augment(source)
    per_line = (time.process_time() - start) / 30
    assert per_line < 0.05, (
        f"{per_line * 1000:.1f} ms per 64x900 line"
    )  # ~4-6 ms CPU time measured; loose for slow machines
