"""Validation: the shards that processes score under torchrun merge into the figures of the whole set."""

from __future__ import annotations

import dataclasses

import pytest
from torch.utils.data import DataLoader

from text_recognizer.data.lines import collate_lines
from training.config import InterCTCConfig
from training.evaluation import evaluate, merge_shards
from training.run_setup import set_up_run

from .helpers import tiny_config


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
