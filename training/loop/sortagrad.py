"""SortaGrad (Amodei et al., Deep Speech 2): the first epoch runs from short lines to long ones.

Early in training a CTC model is fragile; short lines have few alignments and small, stable
gradients, so presenting them first makes divergence (and ``inf``/``nan`` steps) less likely.
Later epochs are shuffled as usual. Like Deep Speech 2 (which sorted by utterance duration), the
trainer sorts by input length, the image width from the headers (``training/loop/batching.py``), when
known; ``label_lengths`` is the fallback for lines drawn on the fly: it reads the label lengths
without decoding images, from folder records or from the synthetic generator's text draw.
"""

from __future__ import annotations

from torch.utils.data import Dataset

from text_recognizer.data.folder import FolderLines
from text_recognizer.data.font_lines import FontLines
from text_recognizer.data.synthetic import SyntheticLines, sample_text
from training.loop.batching import per_line


def label_lengths(dataset: Dataset) -> list[int] | None:
    """Label length of every item of ``dataset``, or ``None`` when it cannot be read cheaply."""
    return per_line(dataset, _leaf_label_lengths)


def _leaf_label_lengths(dataset: Dataset) -> list[int] | None:
    if isinstance(dataset, FolderLines):
        return [len(r.text) for r in dataset.records]
    if isinstance(dataset, SyntheticLines):
        # item i's text is the first draw of its own generator (see SyntheticLines.__getitem__)
        return [len(sample_text(dataset.rng(i), dataset.max_chars)) for i in range(len(dataset))]
    if isinstance(dataset, FontLines):
        return dataset.label_lengths()
    return None
