"""Builds the training and validation datasets a run asks for.

``--data synthetic`` uses the built-in generator (train lines differ every epoch index range,
validation is a fixed set from another seed). Otherwise ``--data`` names dataset folders; they are
checked up front (unknown characters, unreadable images, CTC feasibility) and bad samples are
skipped with a count or stop the run, as ``--bad-samples`` says. ``--data iam`` and
``--data emnist_lines`` name the processed real datasets (built and cached on first use) and bring
their own validation folder. Folder labels are detokenised to natural spacing (``--detokenize``)
and the training set alone is augmented (``--augment``). A folder of PAGE-XML/ALTO files and page
images (no ``labels.tsv``) is read through ``text_recognizer.data.page`` (lines cut out and cached).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch.utils.data import ConcatDataset, Dataset

from text_recognizer.codec import Codec
from text_recognizer.data.augment import AugmentConfig, build_augmentation
from text_recognizer.data.checks import DataReport, check_records
from text_recognizer.data.folder import FolderLines, LineRecord, read_labels
from text_recognizer.data.font_lines import FontLines
from text_recognizer.data.lines import EncodedLines, MappedLines
from text_recognizer.data.page import check_layout_folder, is_layout_folder
from text_recognizer.data.running_text import read_running_text
from text_recognizer.data.synthetic import SyntheticLines
from text_recognizer.data.tokenization import detokenize
from text_recognizer.models.config import ModelConfig
from text_recognizer.models.line_cnn import WindowGeometry
from text_recognizer.normalization import normalizer
from training.loop.config import DataConfig

SYNTHETIC = "synthetic"
IAM = "iam"  # official IAM lines, processed and cached by text_recognizer.data.iam
EMNIST_LINES = "emnist_lines"  # lines of EMNIST characters, text_recognizer.data.emnist_lines
_VAL_SEED_OFFSET = 1_000_003


@dataclass
class Datasets:
    train: Dataset
    val: Dataset
    description: str
    reports: dict[str, DataReport]


def _folders(
    names, codec, model: ModelConfig, policy: str, detok: bool = False, normalization: str = "NFC"
) -> tuple[list, dict[str, DataReport]]:
    geometry = WindowGeometry(model.window_width, model.window_stride)
    normalise = normalizer(normalization)
    parts, reports = [], {}
    for name in names:
        if is_layout_folder(name):  # PAGE-XML / ALTO pages: lines cut out and cached (text_recognizer/data/page.py)
            report = check_layout_folder(name, codec, geometry, model.height, policy, normalize=normalise)
            reports[name] = report
            parts.append((name, report.kept))
            continue
        records = read_labels(name)
        if detok or normalization != "none":
            records = [LineRecord(r.path, normalise(detokenize(r.text) if detok else r.text)) for r in records]
        report = check_records(records, codec, geometry, model.height, policy=policy)
        reports[name] = report
        parts.append((name, report.kept))
    return parts, reports


def _resolve_named(config: DataConfig, model: ModelConfig) -> tuple[list[str], list[str]]:
    """``--data`` entries -> (training folders, default validation folders of named datasets)."""
    train, val = [], []
    for name in config.data:
        if name == IAM:
            from text_recognizer.data.iam import prepare_iam

            folders = prepare_iam(
                config.iam_archives or None, height=model.height, allow_unverified=config.allow_unverified
            )
            train += [str(folders["train"])] + ([str(folders["train_extra"])] if config.iam_train_extra else [])
            val.append(str(folders["val"]))
        elif name == EMNIST_LINES:
            from text_recognizer.data.emnist_lines import EmnistLinesConfig, prepare_emnist_lines

            folders = prepare_emnist_lines(EmnistLinesConfig(height=model.height))
            train.append(str(folders["train"]))
            val.append(str(folders["val"]))
        else:
            train.append(name)
    return train, val


def build_datasets(config: DataConfig, codec: Codec, model: ModelConfig, seed: int) -> Datasets:
    """The train and validation ``EncodedLines`` for a run's data config.

    ``synthetic`` may be mixed with folders (``--data DIR synthetic``): each epoch then adds
    ``--synthetic-train-lines`` generated lines. Only the folder lines are augmented (the
    generator has its own variation), and validation never is. ``--fonts DIR`` adds
    ``--font-train-lines`` lines drawn with the folder's handwriting fonts, augmented like folder lines.
    """
    if not config.data:
        raise ValueError("--data needs at least one value: 'synthetic' or a dataset folder")
    named = [d for d in config.data if d != SYNTHETIC]
    reports: dict[str, DataReport] = {}
    named_val: list[str] = []
    folder_train: Dataset | None = None
    descriptions = []
    if named:
        train_folders, named_val = _resolve_named(dataclasses.replace(config, data=tuple(named)), model)
        parts, reports = _folders(
            train_folders, codec, model, config.bad_samples, config.detokenize, config.unicode_normalization
        )
        folder_train = ConcatDataset([FolderLines(name, records) for name, records in parts])
        descriptions.append(" + ".join(named))
    val_folders = list(config.val_data) or named_val
    if val_folders:
        val_parts, val_reports = _folders(
            val_folders, codec, model, config.bad_samples, config.detokenize, config.unicode_normalization
        )
        reports.update({f"val:{k}": v for k, v in val_reports.items()})
        val: Dataset = ConcatDataset([FolderLines(name, records) for name, records in val_parts])
    elif folder_train is not None:
        folder_train, val = _hold_out(folder_train, config.val_fraction, seed)
    else:
        val = SyntheticLines(config.synthetic_val_lines, seed=seed + _VAL_SEED_OFFSET, height=model.height)
    train_parts: list[Dataset] = []
    augmented = " (augmented)" if config.augment_p >= 1 else f" ({config.augment_p:.0%} augmented)"
    augmentation = None  # one pipeline for the folder lines and the font lines
    if config.augment and (folder_train is not None or config.fonts):
        augmentation = build_augmentation(AugmentConfig(apply_p=config.augment_p))
    if folder_train is not None:
        if augmentation is not None:
            folder_train = MappedLines(folder_train, augmentation)
            descriptions[-1] += augmented
        train_parts.append(folder_train)
    if config.fonts:
        texts = read_running_text(list(config.font_text), seed=seed) if config.font_text else None
        drawn = FontLines(config.fonts, config.font_train_lines, seed=seed, height=model.height,
                          charset=codec.charset, texts=texts)
        text_source = f"{len(texts)} pieces of --font-text" if texts else "generated text"
        descriptions.append(f"{config.font_train_lines} font lines/epoch ({len(drawn.fonts)} fonts, {text_source}, "
                            f"seed {seed})")
        font_lines: Dataset = drawn
        if augmentation is not None:
            font_lines = MappedLines(font_lines, augmentation)
            descriptions[-1] += augmented
        train_parts.append(font_lines)
    if SYNTHETIC in config.data:
        train_parts.append(SyntheticLines(config.synthetic_train_lines, seed=seed, height=model.height))
        descriptions.append(f"synthetic ({config.synthetic_train_lines} lines/epoch, seed {seed})")
    train = train_parts[0] if len(train_parts) == 1 else ConcatDataset(train_parts)
    return Datasets(
        train=EncodedLines(train, codec, model.height, deslant=model.deslant),
        val=EncodedLines(val, codec, model.height, deslant=model.deslant),
        description=" + ".join(descriptions),
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
