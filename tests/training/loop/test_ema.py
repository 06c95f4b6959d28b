"""The weight average (--ema-decay): its update rule, what best.pt and last.pt hold, exact resume."""

from __future__ import annotations

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from training.loop.config import OptimConfig
from training.loop.ema import WeightAverage
from training.loop.trainer import fit

from ..helpers import StopAtStep, tiny_config


def small_net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))


def test_update_warms_up_then_follows_with_the_decay():
    torch.manual_seed(0)
    net = small_net()
    average = WeightAverage(net, decay=0.9)
    assert not any(p.requires_grad for p in average.model.parameters())
    assert not average.model.training
    start = net[0].weight.detach().clone()
    with torch.no_grad():
        net[0].weight.add_(1.0)
    net.train()(torch.randn(8, 3))  # moves the batch-norm running statistics, counts one batch
    assert average.current_decay() == pytest.approx(0.1)  # (1 + 0) / (10 + 0): the first update mostly copies
    average.update(net)
    assert torch.allclose(average.model[0].weight, start + 0.9)
    assert torch.allclose(average.model[1].running_mean, 0.9 * net[1].running_mean)
    assert int(average.model[1].num_batches_tracked) == 1  # integer buffers are copied
    for _ in range(200):
        average.update(net)
    assert average.current_decay() == 0.9
    assert torch.allclose(average.model[0].weight, net[0].weight, atol=1e-6)  # converges on a fixed model
    assert not torch.equal(net[0].weight, start + 0.9)  # the model itself was never touched


def test_bad_decays_are_refused():
    for decay in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError, match="ema-decay"):
            WeightAverage(small_net(), decay)
    for decay in (1.0, -0.1):
        with pytest.raises(ValueError, match="ema-decay"):
            OptimConfig(ema_decay=decay)
    assert OptimConfig().ema_decay == 0.0  # off unless asked for


def test_best_holds_the_average_and_last_the_raw_weights(tmp_path):
    config = tiny_config(tmp_path / "run", optim={"max_epochs": 2, "ema_decay": 0.9}, run={"seed": 3})
    summary = fit(config)
    assert summary["steps"] == 8
    last = load_checkpoint(tmp_path / "run" / "last.pt")
    best = load_checkpoint(tmp_path / "run" / "best.pt")
    average = last.train_state["ema_state"]
    assert average["updates"] == 8 and average["decay"] == 0.9
    raw = last.model_state
    assert any(not torch.equal(raw[k], average["model_state"][k]) for k in raw)  # the average lags the weights
    assert last.provenance.val_cer is None  # validation scored the average, not these weights
    assert best.provenance.val_cer == summary["best_val_cer"]
    if summary["best_epoch"] == 2:  # best at the last validation: it is the average at that point
        assert all(torch.equal(best.model_state[k], average["model_state"][k]) for k in raw)


def test_resume_continues_the_same_average(tmp_path):
    def config(name, **run):
        return tiny_config(tmp_path / name, optim={"max_epochs": 2, "ema_decay": 0.8}, run={"seed": 5, **run})

    fit(config("straight"))
    fit(config("stopped"), loggers=[StopAtStep(3)])
    fit(config("stopped", resume=True))
    a = load_checkpoint(tmp_path / "straight" / "last.pt").train_state["ema_state"]
    b = load_checkpoint(tmp_path / "stopped" / "last.pt").train_state["ema_state"]
    assert a["updates"] == b["updates"] == 8
    assert all(torch.equal(a["model_state"][k], b["model_state"][k]) for k in a["model_state"])
