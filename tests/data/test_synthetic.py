"""Tests for the offline synthetic handwriting-line generator."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PIL import Image

from text_recognizer.codec import DEFAULT_CHARSET, Codec
from text_recognizer.data.synthetic import SyntheticLines, render_line, sample_text
from text_recognizer.data.words import sampling_cdf, words

N_SAMPLE = 200


@pytest.fixture(scope="module")
def items() -> list[tuple[Image.Image, str]]:
    ds = SyntheticLines(N_SAMPLE, seed=123)
    return [ds[i] for i in range(len(ds))]


def test_word_list() -> None:
    ws = words()
    assert 2000 <= len(ws) <= 5000
    assert len(set(ws)) == len(ws)
    assert ws[0] == "the"
    Codec().encode(" ".join(ws))
    cdf = sampling_cdf()
    assert cdf.shape == (len(ws),) and cdf[-1] == 1.0 and np.all(np.diff(cdf) >= 0)


def test_deterministic_per_seed_and_index() -> None:
    a = SyntheticLines(10, seed=7)
    b = SyntheticLines(10, seed=7)
    # different call order, fresh object: same bytes
    first = [a[i] for i in range(5)]
    second = [b[i] for i in reversed(range(5))][::-1]
    for (ia, ta), (ib, tb) in zip(first, second):
        assert ta == tb
        assert ia.size == ib.size and ia.tobytes() == ib.tobytes()
    assert a[3][0].tobytes() == first[3][0].tobytes()
    other = SyntheticLines(10, seed=8)
    differ = sum(other[i][1] != first[i][1] or other[i][0].tobytes() != first[i][0].tobytes() for i in range(5))
    assert differ == 5
    # different indices differ too
    assert len({a[i][1] for i in range(10)}) == 10


def test_len_and_index_errors() -> None:
    ds = SyntheticLines(3, seed=0)
    assert len(ds) == 3
    assert ds[-1][1] == ds[2][1]
    with pytest.raises(IndexError):
        ds[3]
    assert len(list(iter(ds))) == 3


@pytest.mark.parametrize("height", [32, 64, 96])
def test_mode_and_height(height: int) -> None:
    ds = SyntheticLines(5, seed=1, height=height)
    for i in range(len(ds)):
        img, text = ds[i]
        assert isinstance(img, Image.Image) and img.mode == "L"
        assert img.height == height
        assert img.width >= len(text) * 0.15 * height


def test_texts_encodable_and_lengths(items) -> None:
    codec = Codec()
    assert codec.charset == DEFAULT_CHARSET
    lengths = []
    for _, text in items:
        codec.encode(text)  # raises on any character outside IAM's 79
        assert text == text.strip() and text and "  " not in text
        assert len(text) <= 80
        lengths.append(len(text))
    lengths = np.array(lengths)
    assert 35 <= lengths.mean() <= 50
    assert np.mean((lengths >= 20) & (lengths <= 70)) >= 0.75


def test_max_chars_respected() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        for m in (5, 20, 40):
            t = sample_text(rng, max_chars=m)
            assert 0 < len(t) <= m
            Codec().encode(t)


def test_texts_look_like_text(items) -> None:
    vocab = {w.lower() for w in words()}
    tokens = [t for _, text in items for t in text.split()]
    alpha = [re.sub(r"[^A-Za-z']", "", t).lower() for t in tokens]
    alpha = [a.strip("'") for a in alpha if a.strip("'")]
    known = np.mean([a in vocab for a in alpha])
    assert known >= 0.85, known
    joined = "".join(text for _, text in items)
    assert re.search(r"[A-Z]", joined) and re.search(r"[0-9]", joined)
    # sentence starts are capitalised, punctuation follows words
    assert re.search(r"[.?!] [A-Z\"'(]", joined)
    for p in ".,;:?!'\"()-":
        assert p in joined, p
    starts_upper = np.mean([text[0].isupper() for _, text in items])
    assert 0.1 <= starts_upper <= 0.8
    # contractions from the word list
    assert re.search(r"[a-z]'[a-z]", joined)
    # frequent words are frequent (Zipf-like)
    lowered = [a for a in alpha]
    assert lowered.count("the") > lowered.count("laboratory") + 5


def test_variety(items) -> None:
    widths = np.array([img.width for img, _ in items])
    means = np.array([np.asarray(img, dtype=np.float32).mean() for img, _ in items])
    per_char = np.array([img.width / len(t) for img, t in items])
    assert len(set(widths.tolist())) > N_SAMPLE // 2
    assert means.std() > 5.0
    assert per_char.std() > 1.0


def test_width_per_character(items) -> None:
    # CTC needs enough sliding windows: roughly handwriting-like character advances at 64 px
    per_char = np.array([img.width / max(len(t), 1) for img, t in items])
    assert per_char.min() >= 10.0
    assert 14.0 <= per_char.mean() <= 26.0


def test_dark_ink_on_light_paper(items) -> None:
    for img, _ in items[:60]:
        a = np.asarray(img, dtype=np.float32)
        border = np.concatenate([a[0], a[-1], a[:, 0], a[:, -1]])
        darkest = np.percentile(a, 1)
        assert border.mean() > darkest + 60
        assert border.mean() > 150


def test_render_line_direct() -> None:
    rng = np.random.default_rng(5)
    img = render_line("Hello, world! It's 10.30 (1987).", rng, height=48)
    assert img.mode == "L" and img.height == 48
    blank = render_line(" ", np.random.default_rng(1), height=64)
    assert blank.mode == "L" and blank.height == 64
    a = np.asarray(render_line("", np.random.default_rng(2)), dtype=np.float32)
    assert a.shape[0] == 64
