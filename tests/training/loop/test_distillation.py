"""Distillation from a teacher (``--distill-from``): the term, the loss equation, a run that logs it, the refusals."""

from __future__ import annotations

import argparse
import dataclasses

import pytest
import torch

from text_recognizer.checkpoint import load_checkpoint, save_checkpoint
from text_recognizer.codec import Codec
from text_recognizer.models import build_model
from training.loop.checkpointing import load_teacher
from training.loop.config import ExperimentConfig, RunConfig, add_config_arguments, config_from_args
from training.loop.objective import compute_loss, distillation_term
from training.loop.run_state import TrainingError
from training.loop.trainer import fit

from ..helpers import TINY_FLAGS, tiny_config
from .test_interctc_training import Recorder
from .test_label_smoothing import small_batch


def test_the_term_is_zero_for_the_same_posteriors_and_ignores_padding_frames():
    torch.manual_seed(0)
    logits = torch.randn(2, 6, 5)
    frames = torch.tensor([6, 3])
    assert float(distillation_term(logits, logits.clone(), frames)) == pytest.approx(0.0, abs=1e-6)
    other = torch.randn(2, 6, 5)
    assert float(distillation_term(logits, other, frames)) > 0
    padded = other.clone()
    padded[1, 3:] = logits[1, 3:] + 50.0  # frames past the second line's end: not scored
    assert float(distillation_term(logits, padded, frames)) == pytest.approx(float(
        distillation_term(logits, other, frames)), rel=1e-6)
    with pytest.raises(ValueError, match="same windows"):
        distillation_term(logits, torch.randn(2, 7, 5), frames)


def test_loss_is_ctc_plus_the_weighted_term(tmp_path):
    config = tiny_config(tmp_path)
    batch = small_batch()
    torch.manual_seed(0)
    model = build_model(config.model).eval()
    torch.manual_seed(1)
    teacher = build_model(config.model).eval()
    with torch.no_grad():
        plain, plain_info = compute_loss(model, batch, "ctc", "torch")
        itself, itself_info = compute_loss(model, batch, "ctc", "torch", teacher=model, distill_weight=0.5)
        total, info = compute_loss(model, batch, "ctc", "torch", teacher=teacher, distill_weight=0.5)
    assert "distill_loss" not in plain_info
    assert itself_info["distill_loss"] == pytest.approx(0.0, abs=1e-6)
    assert float(itself) == pytest.approx(float(plain), rel=1e-6)
    assert info["ctc_loss"] == pytest.approx(float(plain), rel=1e-6)
    assert info["distill_loss"] > 0
    assert float(total) == pytest.approx(float(plain) + 0.5 * info["distill_loss"], rel=1e-5)


def test_distillation_keeps_a_model_near_its_teacher(tmp_path):
    """The same 40 steps of overfitting one batch, with and without the teacher: with it, the model's
    posteriors end far nearer the teacher's."""
    config = tiny_config(tmp_path)
    batch = small_batch()
    torch.manual_seed(0)
    teacher = build_model(config.model).eval()
    drift = {}
    for weight in (0.0, 5.0):
        model = build_model(config.model)
        model.load_state_dict(teacher.state_dict())
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(40):
            loss, _ = compute_loss(model, batch, "ctc", "torch", teacher=teacher if weight else None,
                                   distill_weight=weight)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            drift[weight] = float(distillation_term(model(batch.images, batch.widths),
                                                    teacher(batch.images, batch.widths),
                                                    model.output_lengths(batch.widths)))
    assert drift[5.0] < 0.5 * drift[0.0]


def test_a_run_distils_from_a_checkpoint_and_logs_both_terms(tmp_path):
    fit(tiny_config(tmp_path / "parent"))
    parent = tmp_path / "parent" / "best.pt"
    recorder = Recorder()
    summary = fit(tiny_config(tmp_path / "child", run={"init_from": str(parent), "distill_from": str(parent),
                                                       "distill_weight": 2.0}), loggers=[recorder])
    assert summary["steps"] > 0
    for metrics in recorder.train:
        assert metrics["distill_loss"] >= 0
        assert metrics["loss"] == pytest.approx(metrics["ctc_loss"] + 2.0 * metrics["distill_loss"], rel=1e-4)


def test_a_teacher_of_another_alphabet_or_other_windows_is_refused(tmp_path):
    fit(tiny_config(tmp_path / "parent"))
    parent = load_checkpoint(tmp_path / "parent" / "best.pt")
    model = build_model(tiny_config(tmp_path).model)
    other_alphabet = save_checkpoint(dataclasses.replace(parent, codec=Codec("abc")), tmp_path / "abc.pt")
    with pytest.raises(TrainingError, match="alphabet differs"):
        load_teacher(other_alphabet, model, Codec(), torch.device("cpu"))
    wider = build_model(tiny_config(tmp_path, model={"window_stride": 2}).model)
    with pytest.raises(TrainingError, match="other frame counts"):
        load_teacher(tmp_path / "parent" / "best.pt", wider, Codec(), torch.device("cpu"))


def test_a_teacher_whose_alphabet_the_run_extended_gives_the_new_characters_nothing(tmp_path):
    """--finetune appends the labels' new characters to the parent's alphabet: the parent still teaches, its
    scores padded so the new characters get no probability, and the term stays finite."""
    fit(tiny_config(tmp_path / "parent"))
    parent = load_checkpoint(tmp_path / "parent" / "best.pt")
    extended = Codec(parent.codec.charset + "\u0153\u00e6")
    model = build_model(dataclasses.replace(tiny_config(tmp_path).model, num_classes=len(extended.charset) + 1))
    teacher = load_teacher(tmp_path / "parent" / "best.pt", model, extended, torch.device("cpu"))
    batch = small_batch()
    with torch.no_grad():
        scores = teacher(batch.images, batch.widths)  # (B, T, C + 2)
        alone = parent.build_model().eval()(batch.images, batch.widths)  # (B, T, C)
        logits = model(batch.images, batch.widths)
    assert scores.shape[-1] == alone.shape[-1] + 2 == logits.shape[-1]
    assert torch.allclose(scores[..., :-2], alone)
    assert float(scores.softmax(-1)[..., -2:].max()) == 0.0
    term = distillation_term(logits, scores, model.output_lengths(batch.widths))
    assert torch.isfinite(term) and float(term) > 0
    with pytest.raises(TrainingError, match="alphabet differs"):  # extended, but not at its end
        load_teacher(tmp_path / "parent" / "best.pt", model, Codec("\u0153\u00e6" + parent.codec.charset),
                     torch.device("cpu"))


def test_flags_and_config_errors():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_args(parser.parse_args([*TINY_FLAGS, "--distill-from", "parent.pt", "--distill-weight",
                                                 "0.5"]), Codec().num_classes)
    assert (config.run.distill_from, config.run.distill_weight) == ("parent.pt", 0.5)
    with pytest.raises(ValueError, match="--distill-weight must be > 0"):
        RunConfig(distill_from="parent.pt", distill_weight=0.0)
    with pytest.raises(ValueError, match="--distill-from needs --loss ctc"):
        RunConfig(distill_from="parent.pt", loss="nll")
    data = ExperimentConfig().to_dict()
    del data["run"]["distill_from"], data["run"]["distill_weight"]  # a config saved before the flags
    assert ExperimentConfig.from_dict(data).run.distill_from == ""
