"""SortaGrad: the first epoch runs from short labels to long ones, later epochs are shuffled."""

from __future__ import annotations

from torch.utils.data import ConcatDataset, Subset

from text_recognizer.codec import Codec
from text_recognizer.data.folder import FolderLines, LineRecord
from text_recognizer.data.lines import EncodedLines, MappedLines
from text_recognizer.data.synthetic import SyntheticLines
from training.loop.batching import EpochSampler
from training.loop.sortagrad import label_lengths


def test_first_epoch_sorted_by_label_length_later_epochs_shuffled():
    lengths = [5, 1, 9, 3, 3, 7, 2, 8]
    sampler = EpochSampler(len(lengths), seed=1, sortagrad_lengths=lengths)
    first = list(sampler)
    assert [lengths[i] for i in first] == sorted(lengths) and sorted(first) == list(range(8))
    sampler.set_epoch(0, skip=3)  # resuming mid-epoch continues the same sorted order
    assert list(sampler) == first[3:]
    sampler.set_epoch(1)
    plain = EpochSampler(len(lengths), seed=1)
    plain.set_epoch(1)
    assert list(sampler) == list(plain)  # epoch 1: the ordinary shuffle
    assert [lengths[i] for i in sampler] != sorted(lengths)


def test_label_lengths_without_decoding_images(tmp_path):
    synthetic = SyntheticLines(6, seed=4, height=32)
    assert label_lengths(EncodedLines(synthetic, Codec(), 32)) == [len(synthetic[i][1]) for i in range(6)]
    folder = FolderLines(tmp_path, [LineRecord(tmp_path / "a.png", "abc"), LineRecord(tmp_path / "b.png", "x")])
    assert label_lengths(Subset(ConcatDataset([folder, folder]), [3, 0])) == [1, 3]
    assert label_lengths(MappedLines(folder, lambda image: image)) == [3, 1]  # augmented folders too
    assert label_lengths(list(range(3))) is None  # unknown dataset types: no SortaGrad
