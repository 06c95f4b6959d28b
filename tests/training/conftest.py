"""Training tests run with W&B off unless a test turns it on (the W&B tests use offline mode in a temp dir)."""

import pytest


@pytest.fixture(autouse=True)
def _wandb_disabled(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("WANDB_SILENT", "true")
