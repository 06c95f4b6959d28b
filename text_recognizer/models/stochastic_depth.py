"""Stochastic depth for the encoder's residual blocks (Huang et al. 2016; as in NeMo / ESPnet).

Block ``l`` (numbered 1..N over ``Encoder.block_names``) computes ``x + g(x)``. In training it is
dropped with probability ``p_l``: a dropped block returns ``x`` and skips ``g`` entirely (cheaper
step); a kept one returns ``x + g(x) / (1 - p_l)``, so the expected output is ``x + g(x)``, which is
what every block returns at evaluation. One Bernoulli draw per block with ``p_l > 0`` per forward
pass, from the global torch CPU generator: seeded by the run, saved and restored with each
checkpoint, so runs are reproducible and resume exactly. Blocks with ``p_l == 0`` draw nothing, so a
run without stochastic depth consumes exactly the random numbers it did before the feature existed.

Probabilities (``p`` the maximum, ``s`` the start layer, blocks ``l < s`` are never dropped):

- ``linear``: ``p_l = (l - s + 1) / L * p`` for ``l >= s``, with ``L = N - s + 1`` droppable blocks;
  with ``s = 1`` this is the paper's ``p_l = l / N * p``, the last block reaching ``p``.
- ``uniform``: ``p_l = p`` for ``l >= s``.

(NeMo's ``stochastic_depth_start_layer`` never drops the start layer itself: NeMo's ``s`` is our ``s + 1``.)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

MODES = ("linear", "uniform")


def drop_probabilities(num_blocks: int, drop_prob: float, mode: str = "linear", start: int = 1) -> list[float]:
    """Drop probability of each of ``num_blocks`` blocks (index 0 is layer 1); validates the settings."""
    if not 0.0 <= drop_prob < 1.0:
        raise ValueError(f"stochastic_depth must be in [0, 1), got {drop_prob!r}")
    if mode not in MODES:
        raise ValueError(f"stochastic_depth_mode must be one of {MODES}, got {mode!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"stochastic_depth_start must be an integer >= 1 (a layer number), got {start!r}")
    if drop_prob == 0.0:
        return [0.0] * num_blocks
    if start > num_blocks:
        raise ValueError(
            f"stochastic_depth_start={start} is past the last of the encoder's {num_blocks} blocks "
            f"(layers are numbered 1..{num_blocks}); nothing could be dropped"
        )
    droppable = num_blocks - start + 1
    probs = [0.0] * (start - 1)
    if mode == "linear":
        probs += [i / droppable * drop_prob for i in range(1, droppable + 1)]
    else:
        probs += [drop_prob] * droppable
    return probs


def residual(x: torch.Tensor, branch: Callable[[], torch.Tensor], drop_prob: float, training: bool) -> torch.Tensor:
    """``x + branch()``, with stochastic depth at rate ``drop_prob`` while ``training``."""
    if not training or drop_prob <= 0.0:
        return x + branch()  # (B, T, D)
    if float(torch.rand(())) < drop_prob:  # one draw from the global CPU generator
        return x  # (B, T, D): the block is skipped, its branch never runs
    return x + branch() / (1.0 - drop_prob)  # (B, T, D): rescaled so the expectation is x + g(x)
