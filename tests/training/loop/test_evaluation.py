"""Validation: the shards that processes score under torchrun merge into the figures of the whole set."""

from __future__ import annotations

import dataclasses

import pytest
from torch.utils.data import DataLoader

from text_recognizer.data.lines import collate_lines
from training.loop.config import InterCTCConfig
from training.loop.evaluation import evaluate, merge_shards
from training.loop.run_setup import set_up_run

from ..helpers import tiny_config


def test_merged_shards_score_like_the_whole_set(tmp_path):
    config = tiny_config(tmp_path / "run", model={"conv_blocks": 2}, data={"synthetic_val_lines": 7})
    run = set_up_run(dataclasses.replace(config, interctc=InterCTCConfig(layers=(1,), weights=(0.3,))))
    order = list(range(len(run.data.val_set)))[::-1]  # any visiting order: results come back in dataset order

    def score(indices):
        loader = DataLoader(run.data.val_set, batch_size=3, sampler=indices, collate_fn=collate_lines)
        return evaluate(run.model, loader, run.codec, run.device, interctc=run.interctc)

    whole = score(order).in_dataset_order(order)
    shards = [order[0::2], order[1::2]]  # as two processes split the set
    merged = merge_shards([score(shard) for shard in shards]).in_dataset_order(shards[0] + shards[1])
    assert (merged.references, merged.predictions) == (whole.references, whole.predictions)
    assert (merged.n, merged.cer, merged.wer) == (whole.n, whole.cer, whole.wer)
    assert whole.n == 7
    assert merged.loss == pytest.approx(whole.loss, rel=1e-6)
    assert merged.extra.keys() == whole.extra.keys() and len(whole.extra) == 2  # the captured layer's loss and CER
    for name, value in whole.extra.items():
        assert merged.extra[name] == pytest.approx(value, rel=1e-6), name


def test_validation_reports_each_folder_on_its_own(tmp_path):
    """Several --val-data folders: each one's CER, named by its last two path parts, beside the pooled one."""
    from torch.utils.data import ConcatDataset

    from text_recognizer.codec import Codec
    from text_recognizer.data.folder import FolderLines, LineRecord
    from text_recognizer.data.lines import EncodedLines
    from training.loop.evaluation import folder_parts, part_cers

    def folder(name: str, n: int) -> FolderLines:
        return FolderLines(tmp_path / name, [LineRecord(tmp_path / f"{i}.png", "ab") for i in range(n)])

    val = EncodedLines(ConcatDataset([folder("timeus/val", 2), folder("cop40/val", 3)]), Codec("ab"), 32)
    parts = folder_parts(val)
    assert parts == [("timeus/val", 2), ("cop40/val", 3)]
    metrics = part_cers(parts, ["ab"] * 5, ["ab", "a", "ab", "ab", "ab"])
    assert metrics == {"val_cer_timeus_val": 0.25, "val_cer_cop40_val": 0.0}
    assert folder_parts(EncodedLines(folder("one/val", 2), Codec("ab"), 32)) == []  # one folder: the pooled CER
