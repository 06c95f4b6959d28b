"""Builds the training and validation datasets a run asks for.

``--data synthetic`` uses the built-in generator (train lines differ every epoch index range,
validation is a fixed set from another seed). Otherwise ``--data`` names dataset folders; they are
checked up front (unknown characters, unreadable images, CTC feasibility) and bad samples are
skipped with a count or stop the run, as ``--bad-samples`` says.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import ConcatDataset, Dataset

from text_recognizer.codec import Codec
from text_recognizer.data.checks import DataReport, check_records
from text_recognizer.data.folder import FolderLines, read_labels
from text_recognizer.data.lines import EncodedLines
from text_recognizer.data.synthetic import SyntheticLines
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.line_cnn import WindowGeometry
from training.config import DataConfig

SYNTHETIC = "synthetic"
_VAL_SEED_OFFSET = 1_000_003


@dataclass
class Datasets:
    train: Dataset
    val: Dataset
    description: str
    reports: dict[str, DataReport]


def _folders(names, codec, model: ModelConfig, policy: str) -> tuple[list, dict[str, DataReport]]:
    geometry = WindowGeometry(model.window_width, model.window_stride)
    parts, reports = [], {}
    for name in names:
        report = check_records(read_labels(name), codec, geometry, model.height, policy=policy)
        reports[name] = report
        parts.append((name, report.kept))
    return parts, reports


def build_datasets(config: DataConfig, codec: Codec, model: ModelConfig, seed: int) -> Datasets:
    """The train and validation ``EncodedLines`` for a run's data config."""
    if not config.data:
        raise ValueError("--data needs at least one value: 'synthetic' or a dataset folder")
    if SYNTHETIC in config.data:
        if len(config.data) > 1:
            raise ValueError("--data synthetic cannot be combined with folders (yet)")
        train = SyntheticLines(config.synthetic_train_lines, seed=seed, height=model.height)
        reports: dict[str, DataReport] = {}
        description = f"synthetic ({config.synthetic_train_lines} lines/epoch, seed {seed})"
    else:
        parts, reports = _folders(config.data, codec, model, config.bad_samples)
        train = ConcatDataset([FolderLines(name, records) for name, records in parts])
        description = " + ".join(config.data)
    if config.val_data:
        val_parts, val_reports = _folders(config.val_data, codec, model, config.bad_samples)
        reports.update({f"val:{k}": v for k, v in val_reports.items()})
        val = ConcatDataset([FolderLines(name, records) for name, records in val_parts])
    elif SYNTHETIC in config.data:
        val = SyntheticLines(config.synthetic_val_lines, seed=seed + _VAL_SEED_OFFSET, height=model.height)
    else:
        train, val = _hold_out(train, config.val_fraction, seed)
    return Datasets(
        train=EncodedLines(train, codec, model.height),
        val=EncodedLines(val, codec, model.height),
        description=description,
        reports=reports,
    )


def _hold_out(dataset: Dataset, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"--val-fraction must be in (0, 1) when --val-data is not given, got {fraction}")
    n = len(dataset)  # type: ignore[arg-type]
    n_val = max(1, round(n * fraction))
    if n - n_val < 1:
        raise ValueError(f"only {n} usable samples: too few to hold out a validation set")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    return torch.utils.data.Subset(dataset, order[n_val:]), torch.utils.data.Subset(dataset, order[:n_val])
