"""Fixtures shared by the whole suite."""

from __future__ import annotations

import pytest
import torch


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
