"""Growing a trained model deeper without changing what it computes.

Every encoder block is residual (``x + g(x)``, ``text_recognizer.models.blocks``), so a block whose
residual branch outputs zero is the identity. A deeper model (more ``conv_blocks`` or
``lstm_layers``) can therefore start from a shallower checkpoint *exactly*: the shared blocks, the
window CNN and the head take the checkpoint's weights and each new block has the last layer of its
branch zeroed. Training then starts from the old model's accuracy instead of from scratch, which
matters when the extra capacity is bought on a GPU for minutes, not hours
(``training/run_experiment.py --init-from CHECKPOINT --lstm-layers N``).

Zeroing only the branch's *last* layer keeps the rest of the branch random, so its gradient is not
zero: the output layer learns first and the block grows into use.
"""

from __future__ import annotations

from torch import nn

from text_recognizer.models.blocks import ConvBlock, LSTMBlock
from text_recognizer.models.config import ModelConfig

#: Config fields a grown model may have larger than the checkpoint it starts from.
GROWABLE = ("conv_blocks", "lstm_layers")


def growth(theirs: ModelConfig, ours: ModelConfig) -> dict[str, tuple[int, int]]:
    """``{field: (theirs, ours)}`` for the block counts that grow; raises ``ValueError`` if one shrinks."""
    grown = {}
    for name in GROWABLE:
        old, new = getattr(theirs, name), getattr(ours, name)
        if new < old:
            raise ValueError(f"{name}: a model can grow from a checkpoint, not shrink ({old} -> {new})")
        if new > old:
            grown[name] = (old, new)
    return grown


def new_block_names(theirs: ModelConfig, ours: ModelConfig) -> list[str]:
    """Names of the encoder blocks ``ours`` has and ``theirs`` lacks (``conv3``, ``lstm3``, ...)."""
    return [name for name in ours.block_names if name not in set(theirs.block_names)]


def zero_residual_branch(block: nn.Module) -> None:
    """Make a residual block the identity by zeroing the last layer of its branch."""
    if isinstance(block, LSTMBlock):
        last = block.project
    elif isinstance(block, ConvBlock):
        last = block.conv
    else:
        raise TypeError(f"no residual branch to zero in a {type(block).__name__}")
    nn.init.zeros_(last.weight)
    nn.init.zeros_(last.bias)
