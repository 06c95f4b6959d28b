"""When can CTC align a label to ``T`` frames at all?

A CTC path must put a blank between two equal adjacent characters, so a label of length ``L``
with ``r`` adjacent repeats needs ``T >= L + r`` frames. Samples that break this have zero
probability under every model: their loss is ``+inf`` and they can only hurt training.
"""

from __future__ import annotations

from collections.abc import Sequence


def required_frames(label: Sequence[int] | str) -> int:
    """Minimum number of output frames CTC needs for ``label``: its length plus adjacent repeats."""
    repeats = sum(1 for a, b in zip(label, label[1:]) if a == b)
    return len(label) + repeats
