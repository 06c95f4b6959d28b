"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]

# Scripts the tests start in subprocesses (``python training/run_experiment.py``, the benchmarks)
# import the package; put this checkout first on their path, so they test this code even where the
# package is not installed, or is installed from another checkout.
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.fixture(autouse=True, scope="session")
def single_torch_thread():
    """One intra-op thread for the whole suite.

    The models in the tests are tiny, so a second thread gains little, while two spinning OpenMP
    threads per process on a 2-core CI machine (beside the uvicorn servers some tests start) can
    slow a step down a hundredfold.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
