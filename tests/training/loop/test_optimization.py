"""``training/loop/optimization.py``: the optimiser and the learning-rate schedule chosen by ``config.optim``."""

from __future__ import annotations

import pytest
import torch

from training.loop.optimization import make_optimizer, make_scheduler

from ..helpers import tiny_config


@pytest.mark.parametrize(("name", "kind"), [("rmsprop", torch.optim.RMSprop), ("adam", torch.optim.Adam),
                                            ("adamw", torch.optim.AdamW)])
def test_optimizer_is_the_one_asked_for_with_its_rate_and_decay(tmp_path, name, kind):
    config = tiny_config(tmp_path, optim={"optimizer": name, "lr": 3e-4, "weight_decay": 0.05})
    model = torch.nn.Linear(3, 2)
    optimizer = make_optimizer(model, config)
    assert type(optimizer) is kind
    group = optimizer.param_groups[0]
    assert (group["lr"], group["weight_decay"]) == (3e-4, 0.05)
    assert len(group["params"]) == 2  # weight and bias: every parameter is trained


def test_warmup_is_linear_then_the_rate_is_held_without_a_schedule(tmp_path):
    config = tiny_config(tmp_path, optim={"lr_schedule": "none", "warmup_steps": 4, "lr": 1.0})
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=config.optim.lr)
    scheduler = make_scheduler(optimizer, config, total_steps=10)
    rates = [scheduler.get_last_lr()[0]]
    for _ in range(6):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    assert rates == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 1.0])


@pytest.mark.parametrize("floor", [0.02, 0.25])
def test_cosine_schedule_decays_to_its_floor(tmp_path, floor):
    config = tiny_config(tmp_path, optim={"lr_schedule": "cosine", "warmup_steps": 0, "cosine_floor": floor})
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=config.optim.lr)
    scheduler = make_scheduler(optimizer, config, total_steps=10)
    rates = []
    for _ in range(10):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    assert rates[4] == pytest.approx(config.optim.lr * (floor + (1 - floor) * 0.5))  # half way
    assert rates[-1] == pytest.approx(config.optim.lr * floor)


def test_a_time_budget_moves_the_schedule_on_when_it_is_further_than_the_steps(tmp_path):
    """With ``--max-minutes`` the decay follows elapsed time when time runs out before the steps do."""
    config = tiny_config(tmp_path, optim={"lr_schedule": "onecycle", "warmup_steps": 0, "lr": 1.0})
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=config.optim.lr)
    elapsed = {"share": 0.0}
    scheduler = make_scheduler(optimizer, config, total_steps=100, time_progress=lambda: elapsed["share"])
    optimizer.step()
    scheduler.step()
    assert scheduler.get_last_lr()[0] == pytest.approx(0.99)  # 1 step of 100
    elapsed["share"] = 0.5
    optimizer.step()
    scheduler.step()
    assert scheduler.get_last_lr()[0] == pytest.approx(0.5)  # half the budget spent: half way down


def test_frozen_parts_keep_their_weights_and_take_no_gradient(tmp_path):
    from text_recognizer.models import build_model

    config = tiny_config(tmp_path, optim={"freeze": ("window_cnn",), "lr": 1e-2})
    model = build_model(config.model)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = make_optimizer(model, config)
    lines, widths = torch.rand(2, 1, config.model.height, 64), torch.tensor([64, 48])
    model(lines, widths).float().pow(2).mean().backward()  # (N, T, C) scores: any loss moves every part
    optimizer.step()
    for name, p in model.named_parameters():
        moved = not torch.equal(p.detach(), before[name])
        assert moved != name.startswith("window_cnn."), name
    with pytest.raises(ValueError, match="no such part .*its parts: window_cnn, encoder, head"):
        make_optimizer(build_model(config.model), tiny_config(tmp_path, optim={"freeze": ("cnn",)}))
