"""Width-bucketed batches: a random epoch whose batches hold lines of similar width."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import ConcatDataset, Subset

from tests.data.test_font_lines import pillow_font
from text_recognizer.codec import Codec
from text_recognizer.data.augment import AugmentConfig, build_augmentation
from text_recognizer.data.folder import FolderLines
from text_recognizer.data.lines import EncodedLines, MappedLines
from text_recognizer.data.synthetic import SyntheticLines, render_line
from training.loop.batching import EpochSampler, bucketed_order, line_aspects, padding_efficiency
from training.loop.config import DataConfig, ExperimentConfig
from training.loop.data import build_datasets
from training.loop.loggers import Logger
from training.loop.trainer import fit

from ..helpers import tiny_config

WORDS = ["a", "to", "ink", "line", "paper", "handwriting", "a longer line of text", "short", "the end", "recognise it"]


def write_folder(folder: Path, count: int, height: int = 32) -> list[str]:
    """``count`` rendered lines of very different widths, with ``labels.tsv``; returns the texts."""
    folder.mkdir(parents=True)
    texts = [WORDS[i % len(WORDS)] for i in range(count)]
    for i, text in enumerate(texts):
        render_line(text, np.random.default_rng(i), height=height).save(folder / f"{i}.png")
    (folder / "labels.tsv").write_text(
        "file\ttext\n" + "".join(f"{i}.png\t{t}\n" for i, t in enumerate(texts)), encoding="utf-8"
    )
    return texts


def test_bucketed_order_is_a_permutation_of_similar_width_batches():
    rng = random.Random(0)
    widths = [rng.uniform(50, 2500) for _ in range(1003)]
    order = torch.randperm(len(widths), generator=torch.Generator().manual_seed(1)).tolist()
    bucketed = bucketed_order(order, widths, batch_size=16, chunk_batches=8, generator=torch.Generator().manual_seed(2))
    assert sorted(bucketed) == list(range(len(widths)))
    assert padding_efficiency(order, widths, 16) < 0.75 < 0.85 < padding_efficiency(bucketed, widths, 16)
    batches = [bucketed[i : i + 16] for i in range(0, len(bucketed), 16)]
    assert [len(b) for b in batches] == [16] * 62 + [11]  # the one short batch stays last
    # each batch comes from one chunk of 8 * 16 shuffled lines, sorted by width
    chunk_of = {index: position // 128 for position, index in enumerate(order)}
    for batch in batches:
        assert len({chunk_of[i] for i in batch}) == 1
        assert [widths[i] for i in batch] == sorted(widths[i] for i in batch)
    # the batches themselves are shuffled: not in chunk order
    assert [chunk_of[b[0]] for b in batches] != sorted(chunk_of[b[0]] for b in batches)
    again = bucketed_order(order, widths, 16, 8, torch.Generator().manual_seed(2))
    assert again == bucketed


def test_bucketed_order_rejects_bad_sizes():
    with pytest.raises(ValueError, match="chunk_batches"):
        bucketed_order([0, 1], [1.0, 2.0], batch_size=2, chunk_batches=0, generator=torch.Generator())


def test_line_aspects_read_headers_through_the_dataset_wrappers(tmp_path):
    write_folder(tmp_path / "lines", 4)
    folder = FolderLines(tmp_path / "lines")
    expected = []
    for _ in folder.records:
        image = folder[len(expected)][0]
        expected.append(image.width / image.height)
    augmented = MappedLines(Subset(ConcatDataset([folder, folder]), [5, 0]), build_augmentation(AugmentConfig()))
    assert line_aspects(EncodedLines(augmented, Codec(), 32)) == [expected[1], expected[0]]
    assert line_aspects(EncodedLines(SyntheticLines(3, seed=0, height=32), Codec(), 32)) is None


def test_font_lines_train_beside_folders_and_keep_width_buckets(tmp_path):
    write_folder(tmp_path / "train", 8)
    write_folder(tmp_path / "val", 4)
    fonts = pillow_font(tmp_path / "fonts").parent
    config = tiny_config(
        tmp_path / "run",
        data={
            "data": (str(tmp_path / "train"),),
            "val_data": (str(tmp_path / "val"),),
            "fonts": str(fonts),
            "font_train_lines": 8,
            "augment_p": 1.0,
            "bucket_batches": 2,
        },
        optim={"max_epochs": 1},
    )
    datasets = build_datasets(config.data, Codec(), config.model, seed=0)
    assert len(datasets.train) == 16 and len(datasets.val) == 4
    assert "8 font lines/epoch (1 fonts, generated text, seed 0) (augmented)" in datasets.description
    aspects = line_aspects(datasets.train)
    font_lines = datasets.train.lines.datasets[1].lines  # EncodedLines(Concat([folder, Mapped(FontLines)]))
    assert aspects is not None and aspects[8:] == font_lines.aspects() and all(a > 0.5 for a in aspects)
    summary = fit(config)
    assert summary["steps"] == 4  # 16 lines in batches of 4


def test_font_lines_draw_the_given_text(tmp_path):
    write_folder(tmp_path / "train", 4)
    fonts = pillow_font(tmp_path / "fonts").parent
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "book.txt").write_text("Dear Sir, " * 40 + "yours very truly.", encoding="utf-8")
    data = {"data": (str(tmp_path / "train"),), "val_data": (str(tmp_path / "train"),), "fonts": str(fonts),
            "font_train_lines": 6, "font_text": (str(tmp_path / "text"),), "augment": False}
    config = tiny_config(tmp_path / "run", data=data)
    datasets = build_datasets(config.data, Codec(), config.model, seed=0)
    assert "6 font lines/epoch (1 fonts," in datasets.description and "pieces of --font-text" in datasets.description
    font_lines = datasets.train.lines.datasets[1]  # EncodedLines(Concat([folder, FontLines]))
    texts = [font_lines[i][1] for i in range(6)]
    assert all(set(t.split()) <= {"Dear", "Sir,", "yours", "very", "truly."} for t in texts), texts
    with pytest.raises(ValueError, match="--font-text .* --fonts"):
        tiny_config(tmp_path / "run2", data={**data, "fonts": ""})


def test_sampler_buckets_later_epochs_and_resumes_mid_epoch():
    widths = [float(w) for w in range(40)]
    random.Random(3).shuffle(widths)
    sampler = EpochSampler(40, seed=5, sortagrad_lengths=widths, widths=widths, batch_size=4, chunk_batches=5)
    first = list(sampler)
    assert [widths[i] for i in first] == sorted(widths)  # SortaGrad epoch: short to long
    sampler.set_epoch(1)
    second = list(sampler)
    assert sorted(second) == list(range(40))
    for start in range(0, 40, 4):
        batch = [widths[i] for i in second[start : start + 4]]
        assert batch == sorted(batch)
    sampler.set_epoch(1, skip=12)
    assert list(sampler) == second[12:]
    plain = EpochSampler(40, seed=5)
    plain.set_epoch(1)
    assert padding_efficiency(second, widths, 4) > padding_efficiency(list(plain), widths, 4)


def test_training_on_folders_uses_buckets_and_reports_in_dataset_order(tmp_path):
    texts = write_folder(tmp_path / "train", 24)
    val_texts = write_folder(tmp_path / "val", 10)
    config = tiny_config(
        tmp_path / "run",
        data={
            "data": (str(tmp_path / "train"),),
            "val_data": (str(tmp_path / "val"),),
            "augment": False,
            "bucket_batches": 2,
        },
        optim={"max_epochs": 2},
    )
    collected = []

    class Samples(Logger):  # keeps the validation sample table
        def log_val(self, epoch, step, metrics, samples):
            collected.append([s["reference"] for s in samples])

    summary = fit(config, loggers=[Samples()])
    assert summary["steps"] == 12 and len(texts) == 24
    assert collected[-1] == val_texts  # validated by width, reported in the folder's order
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["data"]["bucket_batches"] == 2


def test_configs_from_before_bucketing_keep_their_data_order(tmp_path):
    saved = tiny_config(tmp_path).to_dict()
    del saved["data"]["bucket_batches"]
    assert ExperimentConfig.from_dict(saved).data.bucket_batches == 0


def test_configs_from_before_augment_p_keep_augmenting_every_line(tmp_path):
    saved = tiny_config(tmp_path).to_dict()
    del saved["data"]["augment_p"]
    assert ExperimentConfig.from_dict(saved).data.augment_p == 1.0
    assert DataConfig().augment_p == 0.5  # while new runs augment half of the lines


def test_data_flags_are_validated():
    with pytest.raises(ValueError, match="--bucket-batches"):
        DataConfig(bucket_batches=-1)
    with pytest.raises(ValueError, match="--augment-p"):
        DataConfig(augment_p=1.5)
