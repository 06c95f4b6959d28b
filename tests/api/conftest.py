"""Fixtures for the API tests: a tiny model overfit on ``tests/fixtures/lines`` (cached across
sessions in pytest's cache, keyed by the fixtures and the training recipe), a TestClient and a
real uvicorn process on a loopback port."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "lines"


def fixture_lines() -> list[tuple[Path, str]]:
    rows = (FIXTURES / "labels.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [(FIXTURES / f, t) for f, t in (r.split("\t") for r in rows if r.strip())]


def _recipe():
    from text_recognizer.codec import Codec
    from text_recognizer.models import ModelConfig
    from training.loop.config import DataConfig, ExperimentConfig, OptimConfig, RunConfig

    n = len(fixture_lines())
    # Plain overfitting: no augmentation (when this version of DataConfig has the switch).
    no_augment = {"augment": False} if "augment" in {f.name for f in dataclasses.fields(DataConfig)} else {}
    return ExperimentConfig(
        model=ModelConfig(
            height=32,
            cnn_channels=(8, 16),
            feature_dim=64,
            lstm_hidden=64,
            conv_blocks=1,
            lstm_layers=1,
            dropout=0.0,
            num_classes=Codec().num_classes,
        ),
        data=DataConfig(data=(str(FIXTURES),), val_data=(str(FIXTURES),), **no_augment),
        optim=OptimConfig(lr=3e-3, lr_schedule="none", warmup_steps=0, batch_size=n, max_epochs=300),
        run=RunConfig(overfit_batches=1, progress=False, checkpoint_every=0, device="cpu", seed=0),
    )


@pytest.fixture(scope="session")
def tiny_checkpoint(request, tmp_path_factory) -> Path:
    """A checkpoint that reads every fixture line exactly (trained once, ~1 min; cached in .pytest_cache)."""
    import torch

    from training.loop.trainer import fit

    recipe = _recipe()
    key = hashlib.sha256(json.dumps(recipe.to_dict(), sort_keys=True).encode())
    for path, text in fixture_lines():
        key.update(path.read_bytes() + text.encode())
    key.update(torch.__version__.encode())
    cache_plugin = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    root = Path(cache_plugin.mkdir("api_tiny_model")) if cache_plugin else tmp_path_factory.mktemp("api_tiny_model")
    cache = root / key.hexdigest()[:16]
    best = cache / "best.pt"
    if not best.is_file():
        run_dir = cache.with_suffix(".tmp")
        shutil.rmtree(run_dir, ignore_errors=True)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            summary = fit(dataclasses.replace(recipe, run=dataclasses.replace(recipe.run, run_dir=str(run_dir))))
        finally:
            torch.set_num_threads(threads)
        assert summary["best_val_cer"] == 0.0, f"tiny model did not overfit the fixtures: {summary}"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        shutil.copy(run_dir / "best.pt", best)
        shutil.rmtree(run_dir, ignore_errors=True)
    return best


@pytest.fixture(scope="session")
def lines() -> list[tuple[Path, str]]:
    return fixture_lines()


@pytest.fixture(scope="session")
def client(tiny_checkpoint):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.settings import Settings

    app = create_app(
        Settings(
            checkpoint=tiny_checkpoint,
            max_body_bytes=2 * 2**20,
            max_pixels=4_000_000,
            max_side=8_000,
            max_batch=8,
            access_log=False,
        )
    )
    with TestClient(app, raise_server_exceptions=False) as test_client:
        wait_ready(test_client.get)
        yield test_client


def wait_ready(get, timeout: float = 60.0) -> None:
    """Poll ``/health/ready`` (the model loads in the background once the server is up) until 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if get("/health/ready").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"not ready after {timeout} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``uvicorn api.app:app`` in a subprocess; ``url``, ``pid``, ``log()``."""

    def __init__(self, env: dict[str, str], command: list[str] | None = None, cwd: Path = ROOT):
        """``command`` defaults to this interpreter's ``-m uvicorn api.app:app`` with the repo on
        PYTHONPATH; a given command runs with ``env`` alone. The loopback host and port are appended."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"uvicorn-{self.port}-{os.getpid()}.log"
        self._log = open(self.log_path, "w+b")
        if command is None:
            command = [sys.executable, "-m", "uvicorn", "api.app:app", "--log-level", "warning"]
            env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        self.process = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=cwd,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.pid = self.process.pid

    def wait_healthy(self, timeout: float = 60.0, path: str = "/health/ready") -> None:
        """Wait until ``path`` answers 200: by default readiness (the model is loaded and warmed up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + path, timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"uvicorn not answering 200 on {path} after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


SERVER_ENV = {
    "TEXT_RECOGNIZER_MAX_BODY_BYTES": str(2 * 2**20),
    "TEXT_RECOGNIZER_MAX_PIXELS": "4000000",
    "TEXT_RECOGNIZER_MAX_SIDE": "8000",
    "TEXT_RECOGNIZER_MAX_BATCH": "8",
    "TEXT_RECOGNIZER_MAX_PDF_PAGES": "3",
}


@pytest.fixture(scope="session")
def server(tiny_checkpoint):
    srv = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint)})
    try:
        srv.wait_healthy()
        yield srv
    finally:
        srv.stop()


def pytest_configure(config):
    # Starlette 1.x nudges TestClient users towards httpx2; httpx works and is what we pin.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


def start_collections_server(tiny_checkpoint: Path, data_dir: Path) -> Server:
    """A server for the collection routes: its own data directory, two API keys, at most 2 pages a collection."""
    server = Server({**SERVER_ENV, "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint),
                     "TEXT_RECOGNIZER_DATA_DIR": str(data_dir), "TEXT_RECOGNIZER_API_KEYS": "key-a,key-b",
                     "TEXT_RECOGNIZER_MAX_COLLECTION_PAGES": "2"})
    server.wait_healthy()
    return server


@pytest.fixture(scope="module")
def collections_server(tiny_checkpoint, tmp_path_factory):
    srv = start_collections_server(tiny_checkpoint, tmp_path_factory.mktemp("collections"))
    try:
        yield srv
    finally:
        srv.stop()
