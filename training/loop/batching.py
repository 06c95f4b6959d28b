"""Width-bucketed batches: lines of similar width share a batch, so little of a batch is padding.

A batch is padded to its widest line, and the CNN, the LSTM and the CTC loss all run over the
padding. IAM line widths range from under 100 to over 2,500 px, so in a randomly drawn batch of
16 only about 61% of the pixels are ink-bearing line; the rest is padding the model still pays
for (measured on ``train`` + ``train_extra``). ``bucketed_order`` keeps the epoch random but
sorts each run of ``chunk_batches`` batches' worth of shuffled lines by width before cutting it
into batches, then shuffles the batches: about 97% of the pixels are real with chunks of 32
batches, and a CPU epoch runs about 1.5x faster (``benchmarks/RESULTS.md``).

Widths come from the image headers (``line_aspects``), never from decoding images, and are
divided by the height, since the stem scales every line to the model's height.

``EpochSampler`` puts it together with SortaGrad and ``torchrun`` sharding into each epoch's order of
lines, a pure function of (seed, epoch), which is what lets a resumed run see the same batches.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils.data import ConcatDataset, Dataset, Sampler, Subset

from text_recognizer.data.folder import FolderLines, image_size
from text_recognizer.data.font_lines import FontLines
from text_recognizer.data.lines import EncodedLines, MappedLines
from training.loop import distributed


def per_line(dataset: Dataset, read: Callable[[Dataset], list | None]) -> list | None:
    """One value per item of ``dataset``, from ``read`` on the innermost datasets, or ``None``.

    Walks through the wrappers the trainer builds (encoding, augmentation, subsets, concatenation)
    so that per-line facts (width, label length) are read from the records, never from images.
    ``read`` returns ``None`` for a dataset it cannot read cheaply, and then so does this.
    """
    if isinstance(dataset, (EncodedLines, MappedLines)):
        return per_line(dataset.lines, read)
    if isinstance(dataset, Subset):
        inner = per_line(dataset.dataset, read)
        return None if inner is None else [inner[i] for i in dataset.indices]
    if isinstance(dataset, ConcatDataset):
        parts = [per_line(d, read) for d in dataset.datasets]
        return None if any(p is None for p in parts) else [value for p in parts for value in p]
    return read(dataset)


def line_aspects(dataset: Dataset) -> list[float] | None:
    """Width / height of every line of ``dataset`` from its image header, or ``None`` when unknown.

    Synthetic lines are drawn on the fly and have no width until drawn: ``None``; font lines estimate
    theirs from their layout. An unreadable header counts as width 0 (the data checks have already
    dropped or reported such files).
    """
    return per_line(dataset, _leaf_aspects)


def _leaf_aspects(dataset: Dataset) -> list[float] | None:
    if isinstance(dataset, FolderLines):
        return [_aspect(r.path) for r in dataset.records]
    if isinstance(dataset, FontLines):
        return dataset.aspects()
    return None


def _aspect(path) -> float:
    try:
        width, height = image_size(path)
    except ValueError:
        return 0.0
    return width / max(height, 1)


def bucketed_order(order: list[int], widths: list[float], batch_size: int, chunk_batches: int,
                   generator: torch.Generator) -> list[int]:
    """``order`` regrouped so that consecutive ``batch_size`` items have similar ``widths``.

    Each run of ``chunk_batches * batch_size`` items of ``order`` is sorted by width and cut into
    batches; the batches are then shuffled with ``generator``. Only one batch can be short (the
    last of the last chunk) and it stays last, so a ``DataLoader`` with the same ``batch_size``
    cuts exactly these batches. The result is a permutation of ``order``.
    """
    if batch_size < 1 or chunk_batches < 1:
        raise ValueError(f"batch_size and chunk_batches must be >= 1, got {batch_size} and {chunk_batches}")
    chunk = batch_size * chunk_batches
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=widths.__getitem__)
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    short = batches.pop() if batches and len(batches[-1]) < batch_size else None
    shuffled = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    if short is not None:
        shuffled.append(short)
    return [index for batch in shuffled for index in batch]


def padding_efficiency(order: list[int], widths: list[float], batch_size: int) -> float:
    """Share of the padded batch area that is real line, for batches cut from ``order``."""
    padded = sum(max(widths[i] for i in order[s:s + batch_size]) * len(order[s:s + batch_size])
                 for s in range(0, len(order), batch_size))
    return sum(widths[i] for i in order) / padded if padded else 1.0


class EpochSampler(Sampler[int]):
    """Shuffled indices whose order depends only on (seed, epoch); can start mid-epoch.

    With ``sortagrad_lengths`` (a length per item: image width, else label length) epoch 0 runs
    from short lines to long ones (SortaGrad; ties keep their shuffled order). With ``widths``
    the other epochs are width-bucketed (``bucketed_order``: batches of similar widths, in random
    order), else plainly shuffled.
    """

    def __init__(
        self,
        size: int,
        seed: int,
        shuffle: bool = True,
        sortagrad_lengths: list[int] | list[float] | None = None,
        widths: list[float] | None = None,
        batch_size: int = 1,
        chunk_batches: int = 0,
    ):
        self.size, self.seed, self.shuffle = size, seed, shuffle
        self.epoch, self.skip = 0, 0
        self.lengths = sortagrad_lengths
        self.widths, self.batch_size, self.chunk_batches = widths, batch_size, chunk_batches

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.epoch, self.skip = epoch, skip

    def __iter__(self):
        if self.shuffle:
            generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
            order = torch.randperm(self.size, generator=generator).tolist()
            if self.epoch == 0 and self.lengths is not None:
                order.sort(key=self.lengths.__getitem__)  # stable: ties keep their shuffled order
            elif self.widths is not None and self.chunk_batches:
                order = bucketed_order(order, self.widths, self.batch_size, self.chunk_batches, generator)
        else:
            order = list(range(self.size))
        order = distributed.shard_batches(order, self.batch_size)  # this rank's batches (all of them when alone)
        return iter(order[self.skip :])

    def __len__(self) -> int:
        return len(distributed.shard_batches(list(range(self.size)), self.batch_size)) - self.skip
