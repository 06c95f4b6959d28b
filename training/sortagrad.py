"""SortaGrad (Amodei et al., Deep Speech 2): the first epoch runs from short labels to long ones.

Early in training a CTC model is fragile; short lines have few alignments and small, stable
gradients, so presenting them first makes divergence (and ``inf``/``nan`` steps) less likely.
Later epochs are shuffled as usual. ``label_lengths`` reads the label lengths of a training set
without decoding images: from folder records, or from the synthetic generator's text draw.
"""

from __future__ import annotations

from torch.utils.data import ConcatDataset, Dataset, Subset

from text_recognizer.data.folder import FolderLines
from text_recognizer.data.lines import EncodedLines
from text_recognizer.data.synthetic import SyntheticLines, sample_text


def label_lengths(dataset: Dataset) -> list[int] | None:
    """Label length of every item of ``dataset``, or ``None`` when it cannot be read cheaply."""
    if isinstance(dataset, EncodedLines):
        return label_lengths(dataset.lines)
    if isinstance(dataset, Subset):
        inner = label_lengths(dataset.dataset)
        return None if inner is None else [inner[i] for i in dataset.indices]
    if isinstance(dataset, ConcatDataset):
        parts = [label_lengths(d) for d in dataset.datasets]
        return None if any(p is None for p in parts) else [n for p in parts for n in p]
    if isinstance(dataset, FolderLines):
        return [len(r.text) for r in dataset.records]
    if isinstance(dataset, SyntheticLines):
        # item i's text is the first draw of its own generator (see SyntheticLines.__getitem__)
        return [len(sample_text(dataset.rng(i), dataset.max_chars)) for i in range(len(dataset))]
    return None
