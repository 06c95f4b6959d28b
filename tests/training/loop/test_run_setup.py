"""Setting up a run: a run directory that already holds a run is not overwritten without ``--resume``."""

from __future__ import annotations

import pytest

from training.loop.run_state import TrainingError
from training.loop.trainer import fit

from ..helpers import tiny_config


def test_refuses_to_overwrite_a_run_without_resume(tmp_path):
    fit(tiny_config(tmp_path / "run", optim={"max_steps": 1}))
    with pytest.raises(TrainingError, match="--resume"):
        fit(tiny_config(tmp_path / "run", optim={"max_steps": 1}))
