"""From ``(PIL image, text)`` datasets to model-ready tensors, and batching.

``EncodedLines`` applies the shared stem and the codec to any dataset of ``(image, text)``
pairs; ``collate_lines`` pads a list of such samples into one batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from PIL import Image
from torch.utils.data import Dataset

from text_recognizer.codec import Codec
from text_recognizer.stem import preprocess


@dataclass
class LineSample:
    """One preprocessed line: image ``(1, H, W)`` ink-high, label ids ``(L,)`` and the text."""

    image: torch.Tensor
    ids: torch.Tensor
    text: str


@dataclass
class LineBatch:
    """A padded batch. Images are padded on the right with 0 (blank paper)."""

    images: torch.Tensor  # (B, 1, H, W_max) float
    widths: torch.Tensor  # (B,) int64, the unpadded widths
    targets: torch.Tensor  # (B, S_max) int64, padded with 0
    target_lengths: torch.Tensor  # (B,) int64
    texts: list[str]

    def to(self, device: torch.device | str) -> LineBatch:
        return LineBatch(
            self.images.to(device, non_blocking=True), self.widths, self.targets.to(device, non_blocking=True),
            self.target_lengths, self.texts,
        )


class MappedLines(Dataset):
    """``(fn(image), text)`` for each ``(image, text)`` of a dataset: e.g. augmentation of one part."""

    def __init__(self, lines: Dataset, fn: Callable[[Image.Image], Image.Image]):
        self.lines = lines
        self.fn = fn

    def __len__(self) -> int:
        return len(self.lines)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[Image.Image, str]:
        image, text = self.lines[index]
        return self.fn(image), text


class EncodedLines(Dataset):
    """Stem + codec over a dataset of ``(PIL image, text)`` (augment the PIL images with ``MappedLines``)."""

    def __init__(self, lines: Dataset, codec: Codec, height: int, deslant: bool = False):
        self.lines = lines
        self.codec = codec
        self.height = height
        self.deslant = deslant  # the model's stem setting (ModelConfig.deslant)

    def __len__(self) -> int:
        return len(self.lines)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> LineSample:
        image, text = self.lines[index]
        tensor = preprocess(image, self.height, deslant=self.deslant)  # (1, H, W)
        ids = torch.tensor(self.codec.encode(text), dtype=torch.int64)  # (L,)
        return LineSample(tensor, ids, text)


def collate_lines(samples: Sequence[LineSample]) -> LineBatch:
    """Pad images to the widest and targets to the longest in the batch."""
    if not samples:
        raise ValueError("cannot collate an empty list of samples")
    height = samples[0].image.shape[1]
    widths = torch.tensor([s.image.shape[2] for s in samples], dtype=torch.int64)
    lengths = torch.tensor([len(s.ids) for s in samples], dtype=torch.int64)
    images = torch.zeros(len(samples), 1, height, int(widths.max()))
    targets = torch.zeros(len(samples), max(int(lengths.max()), 1), dtype=torch.int64)
    for i, sample in enumerate(samples):
        if sample.image.shape[1] != height:
            raise ValueError(f"sample {i} is {sample.image.shape[1]} px high, expected {height}")
        images[i, :, :, : sample.image.shape[2]] = sample.image
        targets[i, : len(sample.ids)] = sample.ids
    return LineBatch(images, widths, targets, lengths, [s.text for s in samples])


def width_sorted_chunks(widths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices of lines grouped ``batch_size`` at a time in order of width, so each inference batch
    pads little; callers put the results back in input order."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(widths)), key=widths.__getitem__)
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def pad_lines(lines: Sequence[torch.Tensor], min_width: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """``(1, H, W_i)`` stem outputs -> a zero-padded ``(B, 1, H, max W_i)`` batch and its widths ``(B,)``.

    Zero is blank paper in the stem's ink-high convention, so padding adds no ink; ``min_width``
    widens the batch for models that need at least one window.
    """
    widths = torch.tensor([line.shape[-1] for line in lines])  # (B,)
    batch = torch.zeros(len(lines), 1, lines[0].shape[-2], max(int(widths.max()), min_width))  # (B, 1, H, W)
    for row, line in enumerate(lines):
        batch[row, :, :, : line.shape[-1]] = line
    return batch, widths
