"""The non-finite guard: a bad step is skipped, dumped and logged; too many in a row stop the run cleanly.

The failures are real: a ``TransientFault`` logger (it gets the model through ``Logger.watch``)
writes NaN into one weight of the live model after a given step, the way a hardware glitch or a
stray in-place write would, and heals it after a number of skipped steps. Nothing of ours is mocked.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint
from training.loop.debug import main as debug_main
from training.loop.debug import replay
from training.loop.guard import NonFiniteGuard
from training.loop.loggers import Logger
from training.loop.run_state import TrainingError
from training.loop.trainer import fit

from ..helpers import tiny_config

MODULE = "window_cnn.project"  # a layer in the middle of the network: its input stays finite


class TransientFault(Logger):
    """Sets ``<module>.weight[0, 0]`` to NaN after training step ``at``; restores it after ``lasting`` bad steps."""

    def __init__(self, at: int, lasting: int, module: str = MODULE):
        self.at, self.lasting, self.module = at, lasting, module
        self.seen, self.saved, self.events = 0, None, []

    def watch(self, model):
        self.weight = model.get_parameter(f"{self.module}.weight")

    def log_train(self, step, metrics):
        if step == self.at:
            self.saved = self.weight.detach().clone()
            with torch.no_grad():
                self.weight[0, 0] = float("nan")

    def log_event(self, step, event):
        self.events.append((step, event))
        if event.get("event") == "bad_step":
            self.seen += 1
            if self.seen == self.lasting:
                with torch.no_grad():
                    self.weight.copy_(self.saved)


def _finite_state(state: dict) -> bool:
    return all(bool(torch.isfinite(v).all()) for v in state.values() if v.is_floating_point())


def test_bad_step_is_skipped_dumped_and_replayed(tmp_path, capsys):
    run = tmp_path / "run"
    fault = TransientFault(at=2, lasting=1)
    summary = fit(tiny_config(run), loggers=[fault])
    # training went on: all 4 steps ran, one was skipped
    assert summary["steps"] == 4 and summary["bad_steps"] == 1, summary
    assert summary["final_val_cer"] is not None
    assert _finite_state(load_checkpoint(run / "last.pt").model_state)
    dump_file = run / "bad_steps" / "step_0000003.pt"
    assert sorted(p.name for p in (run / "bad_steps").iterdir()) == [dump_file.name]
    assert "step 3 skipped: non-finite loss nan" in capsys.readouterr().out

    raw = torch.load(dump_file, weights_only=True)  # plain types only
    dump = {**raw["extra"], "model_state": raw["model_state"]}  # a checkpoint bundle, the step's facts in extra
    assert dump["step"] == 3 and dump["epoch"] == 1 and not dump["loss_finite"] and math.isnan(dump["loss_value"])
    assert dump["batch"]["images"].shape[0] == len(dump["batch"]["texts"]) == 4
    assert dump["batch"]["target_lengths"].tolist() == [len(t) for t in dump["batch"]["texts"]]
    assert "torch" in dump["rng"] and dump["checkpoint"] is None  # no last.pt existed yet (checkpoint_every 0)
    # the model as the step saw it: the NaN weight, but BatchNorm statistics restored to finite values
    assert math.isnan(dump["model_state"][f"{MODULE}.weight"][0, 0])
    assert all(bool(torch.isfinite(v).all()) for k, v in dump["model_state"].items() if "running" in k)

    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    events = [r for r in records if r["kind"] == "event" and r["event"] == "bad_step"]
    assert len(events) == 1 and events[0]["step"] == 3 and events[0]["dump"] == str(dump_file)
    assert [r["step"] for r in records if r["kind"] == "train"] == [1, 2, 4]  # no train record for the bad step

    # replay reproduces it, and the trace names the module whose weight went bad
    result = replay(dump_file, trace=True)
    assert result.reproduced and math.isnan(result.loss)
    assert result.first_nonfinite_module == MODULE and result.first_module_input_finite
    assert not result.input_nonfinite
    # with the clean weights of the finished run, the same batch is fine
    clean = replay(dump_file, checkpoint=str(run / "last.pt"))
    assert not clean.reproduced and math.isfinite(clean.loss) and clean.first_nonfinite_module == ""
    assert math.isfinite(clean.grad_norm) and not clean.nonfinite_grads

    assert debug_main(["replay", str(dump_file), "--trace"]) == 0
    out = capsys.readouterr().out
    assert "reproduced" in out and f"first module with a non-finite forward output: {MODULE}" in out


def test_consecutive_bad_steps_stop_cleanly_and_resume(tmp_path):
    run = tmp_path / "run"

    def config(resume=False):
        return tiny_config(run, run={"max_bad_steps": 2, "resume": resume})

    # the fault lasts two steps: two skipped steps in a row reach --max-bad-steps 2
    with pytest.raises(TrainingError) as error:
        fit(config(), loggers=[TransientFault(at=1, lasting=2)])
    message = str(error.value)
    assert "2 consecutive training steps" in message and "--max-bad-steps 2" in message
    for step in (2, 3):
        assert str(run / "bad_steps" / f"step_{step:07d}.pt") in message
    assert "python -m training.loop.debug replay" in message and "--resume" in message
    # last.pt: the model before the first bad step (its updates were skipped), positioned after the bad batches
    bundle = load_checkpoint(run / "last.pt")
    assert _finite_state(bundle.model_state)
    counters = bundle.train_state["counters"]
    assert counters["step"] == 3 and counters["bad_steps"] == 2 and counters["batch_in_epoch"] == 3

    summary = fit(config(resume=True))
    assert summary["steps"] == 4 and summary["bad_steps"] == 2 and summary["epochs"] == 1
    assert _finite_state(load_checkpoint(run / "last.pt").model_state)


def test_guard_check_finds_non_finite_gradients_with_a_finite_loss(tmp_path):
    model = torch.nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    loss = model(torch.ones(1, 2)).sqrt().sum()  # d sqrt(x)/dx at 0 is inf
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    problem = NonFiniteGuard.check(model, loss.detach(), norm)
    assert problem is not None and problem.loss_finite and set(problem.nonfinite_grads) == {"weight", "bias"}
    assert "non-finite gradient" in problem.describe()
    assert NonFiniteGuard.check(model, torch.tensor(1.0), torch.tensor(2.0)) is None
    with pytest.raises(ValueError, match="max_bad_steps"):
        NonFiniteGuard(tmp_path, -1)
