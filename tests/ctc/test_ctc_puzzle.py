"""docs/ctc_puzzle.md: "the CTC loss of a perfect prediction is higher than that of an all-blank one".

Every number quoted in the document is computed here with our own ``ctc_loss`` (impl="torch").
Label "hello" (ids h e l l o), C = 80 classes, blank = 0. A frame "with confidence p" puts
probability p on one class and spreads 1 - p evenly over the other 79.
"""

from __future__ import annotations

import math

import pytest
import torch

from text_recognizer.codec import Codec
from text_recognizer.ctc import ctc_loss

CODEC = Codec()
TEXT = "hello"
IDS = CODEC.encode(TEXT)
H, E, L, O = IDS[0], IDS[1], IDS[2], IDS[4]  # noqa: E741 (named after the letters of "hello")
BLANK = 0


def frames(ids: list[int], p: float) -> torch.Tensor:
    """Log-probabilities ``(1, T, C)``: class ``ids[t]`` gets ``p`` at frame ``t``, the rest share ``1 - p``."""
    c = CODEC.num_classes
    log_probs = torch.full((len(ids), c), math.log((1 - p) / (c - 1)), dtype=torch.float64)
    log_probs[torch.arange(len(ids)), torch.tensor(ids)] = math.log(p)
    return log_probs[None]


def loss(x: torch.Tensor, reduction: str = "none") -> float:
    targets = torch.tensor([IDS])
    lengths = (torch.tensor([x.shape[1]]), torch.tensor([len(IDS)]))
    return float(ctc_loss(x, targets, *lengths, reduction=reduction, impl="torch"))


VALID = [H, E, L, BLANK, L, O]  # a genuinely perfect alignment: a blank separates the two l's
NO_BLANK = [H, E, L, L, O, O]  # "perfect" to the eye, but collapses to "helo"


def test_a_genuinely_perfect_alignment_beats_all_blank():
    assert CODEC.num_classes == 80 and TEXT == CODEC.decode(IDS)
    assert loss(frames(VALID, 0.99)) == pytest.approx(0.0603, abs=1e-4)
    assert loss(frames([BLANK] * 6, 0.99)) == pytest.approx(44.88, abs=1e-2)
    assert loss(frames([BLANK] * 6, 0.5)) == pytest.approx(26.01, abs=1e-2)
    assert loss(frames(VALID, 0.99)) < loss(frames([BLANK] * 6, 0.5)) < loss(frames([BLANK] * 6, 0.99))


def test_cause_1_probabilities_instead_of_log_probabilities():
    # ctc_loss applies log_softmax to what it gets; probabilities in [0, 1] become scores one nat apart at most,
    # so every frame looks almost uniform, and with enough frames all-blank wins.
    valid24 = VALID + [BLANK] * 18
    assert loss(frames(valid24, 0.999)) == pytest.approx(0.0240, abs=1e-4)  # log-probabilities: right
    as_probs = loss(frames(valid24, 0.999).exp())
    blank_probs = loss(frames([BLANK] * 24, 0.999).exp())
    assert as_probs == pytest.approx(76.26, abs=1e-2) and blank_probs == pytest.approx(74.61, abs=1e-2)
    assert as_probs > blank_probs  # the puzzle
    # PyTorch's own F.ctc_loss takes log-probabilities as they are: probabilities give a *negative* "loss"
    raw = torch.nn.functional.ctc_loss(frames(VALID, 0.99).exp().transpose(0, 1), torch.tensor([IDS]),
                                       torch.tensor([6]), torch.tensor([5]), reduction="none")
    assert float(raw) == pytest.approx(-5.94, abs=1e-2)


def test_cause_2_mean_divides_by_the_target_length():
    # the same all-blank output: 33.47 summed, 6.69 per target character; an unsure but valid alignment
    # (p = 0.3) summed is 7.22: compared across reductions, "perfect" loses
    assert loss(frames([BLANK] * 6, 0.9), "sum") == pytest.approx(33.47, abs=1e-2)
    assert loss(frames([BLANK] * 6, 0.9), "mean") == pytest.approx(33.47 / 5, abs=1e-2)
    assert loss(frames(VALID, 0.3), "sum") == pytest.approx(7.22, abs=1e-2)
    assert loss(frames(VALID, 0.3), "sum") > loss(frames([BLANK] * 6, 0.9), "mean")
    # compared with the same reduction, the valid alignment wins both ways
    for reduction in ("sum", "mean"):
        assert loss(frames(VALID, 0.3), reduction) < loss(frames([BLANK] * 6, 0.9), reduction)


def test_cause_3_no_blank_between_repeated_characters():
    # "h e l l o o" decodes to "helo": every path for "hello" must pay for a blank somewhere; the more
    # confident the wrong frames, the higher the loss, until all-blank (even at p = 0.5) is cheaper
    no_blank = {p: loss(frames(NO_BLANK, p)) for p in (0.9, 0.99, 0.999, 0.9999)}
    assert [round(v, 2) for v in no_blank.values()] == [13.77, 17.99, 22.56, 27.16]
    assert no_blank[0.9999] > loss(frames([BLANK] * 6, 0.5))
    # with only five frames "hello" cannot be aligned at all: the loss is +inf (0 with zero_infinity)
    assert loss(frames(IDS, 0.99)) == math.inf
    five = frames(IDS, 0.99)
    zeroed = ctc_loss(five, torch.tensor([IDS]), torch.tensor([5]), torch.tensor([5]), reduction="none",
                      zero_infinity=True)
    assert float(zeroed) == 0.0
