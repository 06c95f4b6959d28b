"""Tests for text_recognizer.data.lines: EncodedLines (stem + codec) and collate_lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps
from torch.utils.data import DataLoader

from text_recognizer.codec import Codec, UnknownCharacterError
from text_recognizer.data.folder import FolderLines
from text_recognizer.data.lines import (
    EncodedLines,
    LineBatch,
    LineSample,
    MappedLines,
    collate_lines,
    pad_lines,
    width_sorted_chunks,
)
from text_recognizer.data.synthetic import render_line
from text_recognizer.stem import preprocess

HEIGHT = 32
TEXTS = ["Hi", "A longer line, with 'quotes'.", "ok"]


@pytest.fixture(scope="module")
def pairs() -> list[tuple[Image.Image, str]]:
    return [(render_line(t, np.random.default_rng(i), height=48), t) for i, t in enumerate(TEXTS)]


def test_encoded_lines_apply_stem_and_codec(pairs) -> None:
    codec = Codec()
    dataset = EncodedLines(pairs, codec, HEIGHT)
    assert len(dataset) == 3
    for i, (image, text) in enumerate(pairs):
        sample = dataset[i]
        assert isinstance(sample, LineSample)
        assert sample.text == text
        assert sample.ids.dtype == torch.int64 and sample.ids.tolist() == codec.encode(text)
        assert torch.equal(sample.image, preprocess(image, HEIGHT))
        assert sample.image.shape == (1, HEIGHT, round(image.width * HEIGHT / image.height))


def test_mapped_lines_augment_the_pil_image_before_the_stem(pairs) -> None:
    seen = []

    def mirror(image: Image.Image) -> Image.Image:
        seen.append(image)
        return ImageOps.mirror(image)

    sample = EncodedLines(MappedLines(pairs, mirror), Codec(), HEIGHT)[0]
    assert len(seen) == 1 and isinstance(seen[0], Image.Image)
    assert torch.equal(sample.image, preprocess(ImageOps.mirror(pairs[0][0]), HEIGHT))
    unmirrored = preprocess(pairs[0][0], HEIGHT)
    assert not torch.equal(sample.image, unmirrored)
    torch.testing.assert_close(sample.image, unmirrored.flip(-1), atol=0.02, rtol=0)


def test_encoded_lines_unknown_character() -> None:
    image = render_line("cafe", np.random.default_rng(0), height=32)
    with pytest.raises(UnknownCharacterError, match="'é'"):
        EncodedLines([(image, "café")], Codec(), HEIGHT)[0]


def test_collate_pads_images_and_targets(pairs) -> None:
    samples = [EncodedLines(pairs, Codec(), HEIGHT)[i] for i in range(3)]
    batch = collate_lines(samples)
    assert isinstance(batch, LineBatch)
    widths = [s.image.shape[2] for s in samples]
    lengths = [len(t) for t in TEXTS]
    assert batch.images.shape == (3, 1, HEIGHT, max(widths))
    assert batch.images.dtype == torch.float32
    assert batch.widths.dtype == torch.int64 and batch.widths.tolist() == widths
    assert batch.targets.shape == (3, max(lengths)) and batch.targets.dtype == torch.int64
    assert batch.target_lengths.dtype == torch.int64 and batch.target_lengths.tolist() == lengths
    assert batch.texts == TEXTS
    for i, sample in enumerate(samples):
        w, n = widths[i], lengths[i]
        assert torch.equal(batch.images[i, :, :, :w], sample.image)
        assert not batch.images[i, :, :, w:].any()  # padded with 0 = blank paper (ink high)
        assert batch.targets[i, :n].tolist() == sample.ids.tolist()
        assert not batch.targets[i, n:].any()  # padded with 0 = blank


def hand_sample(width: int, ids: list[int], text: str, height: int = 8) -> LineSample:
    image = torch.full((1, height, width), 0.5)
    return LineSample(image, torch.tensor(ids, dtype=torch.int64), text)


def test_collate_hand_built() -> None:
    batch = collate_lines([hand_sample(3, [5, 6], "ab"), hand_sample(5, [7], "c")])
    assert batch.images.shape == (2, 1, 8, 5)
    assert batch.images[0, 0, 0].tolist() == [0.5, 0.5, 0.5, 0.0, 0.0]
    assert batch.targets.tolist() == [[5, 6], [7, 0]]
    assert batch.widths.tolist() == [3, 5] and batch.target_lengths.tolist() == [2, 1]


def test_collate_all_empty_labels() -> None:
    batch = collate_lines([hand_sample(4, [], ""), hand_sample(4, [], "")])
    assert batch.targets.shape == (2, 1)  # at least one column
    assert batch.target_lengths.tolist() == [0, 0]
    assert batch.texts == ["", ""]


def test_collate_single_sample() -> None:
    batch = collate_lines([hand_sample(6, [1, 2, 3], "abc")])
    assert batch.images.shape == (1, 1, 8, 6) and batch.targets.tolist() == [[1, 2, 3]]


def test_collate_height_mismatch() -> None:
    with pytest.raises(ValueError, match="sample 1 is 16 px high, expected 8"):
        collate_lines([hand_sample(4, [1], "a"), hand_sample(4, [1], "a", height=16)])


def test_collate_empty_list() -> None:
    with pytest.raises(ValueError, match="empty"):
        collate_lines([])


def test_batch_to_keeps_lengths_on_cpu() -> None:
    batch = collate_lines([hand_sample(3, [5], "a")]).to("cpu")
    assert batch.images.device.type == "cpu" and batch.widths.device.type == "cpu"
    assert batch.texts == ["a"]


def test_folder_to_dataloader(tmp_path: Path, pairs) -> None:
    rows = []
    for i, (image, text) in enumerate(pairs):
        image.save(tmp_path / f"{i}.png")
        rows.append(f"{i}.png\t{text}\n")
    (tmp_path / "labels.tsv").write_text("file\ttext\n" + "".join(rows), encoding="utf-8")
    loader = DataLoader(EncodedLines(FolderLines(tmp_path), Codec(), HEIGHT), batch_size=2,
                        collate_fn=collate_lines)
    batches = list(loader)
    assert [b.texts for b in batches] == [TEXTS[:2], TEXTS[2:]]
    assert batches[0].images.shape[:3] == (2, 1, HEIGHT)
    assert batches[0].target_lengths.tolist() == [len(TEXTS[0]), len(TEXTS[1])]


def test_width_sorted_chunks_cover_every_line_once_in_width_order() -> None:
    widths = [50, 10, 40, 10, 30]
    chunks = width_sorted_chunks(widths, 2)
    assert chunks == [[1, 3], [4, 2], [0]]
    assert sorted(i for chunk in chunks for i in chunk) == list(range(len(widths)))
    with pytest.raises(ValueError, match="batch_size"):
        width_sorted_chunks(widths, 0)


def test_pad_lines_pads_with_blank_paper_and_keeps_each_line() -> None:
    lines = [torch.rand(1, 8, 5), torch.rand(1, 8, 3)]
    batch, widths = pad_lines(lines, min_width=7)
    assert batch.shape == (2, 1, 8, 7) and widths.tolist() == [5, 3]
    assert torch.equal(batch[0, :, :, :5], lines[0]) and torch.equal(batch[1, :, :, :3], lines[1])
    assert batch[1, :, :, 3:].abs().sum() == 0 and batch[0, :, :, 5:].abs().sum() == 0
