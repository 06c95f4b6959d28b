"""The training objective's CTC averaging (``--ctc-reduction``): line mean vs character mean."""

from __future__ import annotations

import argparse
import json

import pytest
import torch
import torch.nn.functional as F

from text_recognizer.codec import Codec
from text_recognizer.ctc.interctc import InterCTC
from text_recognizer.data.lines import LineSample, collate_lines
from text_recognizer.models import build_model
from training.loop.config import ExperimentConfig, add_config_arguments, config_from_args
from training.loop.objective import batch_ctc_loss, compute_loss
from training.loop.trainer import fit

from ..helpers import TINY_FLAGS, tiny_config


def ctc_inputs(lengths=(2, 9), frames=20, classes=6, seed=0):
    """Random logits ``(B, T, C)`` and padded targets of the given lengths (ids 1..C-1, no blank)."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(len(lengths), frames, classes, generator=generator)
    targets = torch.randint(1, classes, (len(lengths), max(lengths)), generator=generator)
    return logits, targets, torch.full((len(lengths),), frames), torch.tensor(lengths)


def per_line_losses(logits, targets, frames, lengths):
    """PyTorch's own per-line CTC losses (summed over each line's characters), as the reference."""
    log_probs = logits.log_softmax(-1).transpose(0, 1)  # (T, B, C)
    return F.ctc_loss(log_probs, targets, frames, lengths, reduction="none")


def test_line_reduction_is_the_mean_of_per_character_line_losses():
    logits, targets, frames, lengths = ctc_inputs()
    expected = (per_line_losses(logits, targets, frames, lengths) / lengths).mean()
    assert float(batch_ctc_loss(logits, targets, frames, lengths, "line", "torch")) == pytest.approx(float(expected))


def test_char_reduction_weighs_every_character_the_same():
    logits, targets, frames, lengths = ctc_inputs()
    losses = per_line_losses(logits, targets, frames, lengths)
    char = float(batch_ctc_loss(logits, targets, frames, lengths, "char", "torch"))
    line = float(batch_ctc_loss(logits, targets, frames, lengths, "line", "torch"))
    assert char == pytest.approx(float(losses.sum() / lengths.sum()))
    assert char != pytest.approx(line)  # lines of 2 and 9 characters: the two averages differ


def test_both_reductions_agree_when_every_line_has_the_same_length():
    logits, targets, frames, lengths = ctc_inputs(lengths=(5, 5, 5))
    char = batch_ctc_loss(logits, targets, frames, lengths, "char", "torch")
    line = batch_ctc_loss(logits, targets, frames, lengths, "line", "torch")
    assert float(char) == pytest.approx(float(line), rel=1e-6)


def test_char_reduction_gradient_matches_the_reference():
    logits, targets, frames, lengths = ctc_inputs()
    ours = logits.clone().requires_grad_(True)
    batch_ctc_loss(ours, targets, frames, lengths, "char", "torch").backward()
    reference = logits.clone().requires_grad_(True)
    (per_line_losses(reference, targets, frames, lengths).sum() / lengths.sum()).backward()
    torch.testing.assert_close(ours.grad, reference.grad)


def test_unknown_reduction_is_refused():
    logits, targets, frames, lengths = ctc_inputs()
    with pytest.raises(ValueError, match="CTC reduction must be one of"):
        batch_ctc_loss(logits, targets, frames, lengths, "batch", "torch")


def test_compute_loss_and_interctc_use_the_same_reduction():
    config = tiny_config("unused", model={"conv_blocks": 2})
    torch.manual_seed(0)
    model = build_model(config.model).eval()  # eval: no dropout, so the forwards agree
    codec = Codec()
    samples = [LineSample(torch.rand(1, 32, 160), torch.tensor(codec.encode(t)), t) for t in ("ab", "hello world")]
    batch = collate_lines(samples)
    interctc = InterCTC([1], [0.3])
    with torch.no_grad():
        line, line_info = compute_loss(model, batch, "ctc", "torch", interctc)
        char, char_info = compute_loss(model, batch, "ctc", "torch", interctc, ctc_reduction="char")
        logits = model(batch.images, batch.widths)  # (B, T, C)
        frames = model.output_lengths(batch.widths)
        losses = per_line_losses(logits, batch.targets, frames, batch.target_lengths)
    assert char_info["final_loss"] == pytest.approx(float(losses.sum() / batch.target_lengths.sum()), rel=1e-5)
    assert line_info["final_loss"] == pytest.approx(float((losses / batch.target_lengths).mean()), rel=1e-5)
    assert float(char) == pytest.approx(0.7 * char_info["final_loss"] + 0.3 * char_info["interctc"][1], rel=1e-5)
    assert char_info["interctc"][1] != pytest.approx(line_info["interctc"][1])


def test_flag_is_saved_and_old_configs_keep_the_line_mean(tmp_path):
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_args(parser.parse_args([*TINY_FLAGS, "--ctc-reduction", "char"]), Codec().num_classes)
    assert config.run.ctc_reduction == "char"
    with pytest.raises(SystemExit):
        parser.parse_args(["--ctc-reduction", "token"])
    summary = fit(tiny_config(tmp_path / "run", optim={"max_steps": 2}, run={"ctc_reduction": "char"}))
    assert summary["steps"] == 2
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["run"]["ctc_reduction"] == "char"
    del saved["run"]["ctc_reduction"]  # a config written before the flag existed
    assert ExperimentConfig.from_dict(saved).run.ctc_reduction == "line"
