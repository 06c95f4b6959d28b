"""Serving settings, read once from environment variables (all optional).

=====================================  ==========================================================
``TEXT_RECOGNIZER_CHECKPOINT``          model checkpoint (default: the bundled ``default.pt``)
``TEXT_RECOGNIZER_DEVICE``              torch device (default ``cpu``)
``TEXT_RECOGNIZER_MAX_BODY_BYTES``      largest request body, bytes (default 10 MiB) -> 413
``TEXT_RECOGNIZER_MAX_PIXELS``          largest image, width x height (default 16 000 000) -> 413
``TEXT_RECOGNIZER_MAX_SIDE``            longest image side in pixels (default 20 000) -> 413
``TEXT_RECOGNIZER_MAX_BATCH``           most images in one batch request (default 32) -> 413
``TEXT_RECOGNIZER_WORKERS``             inference jobs running at once (default: CPUs, at most 4)
``TEXT_RECOGNIZER_TORCH_THREADS``       torch intra-op threads (default: CPUs // workers)
``TEXT_RECOGNIZER_MAX_QUEUE``           requests waiting for a worker before 503 (default 256)
``TEXT_RECOGNIZER_BATCH_SIZE``          lines per forward pass in a batch request (default 16)
``TEXT_RECOGNIZER_DECODER``             default decoder, ``greedy`` or ``beam`` (default ``greedy``;
                                        a request's ``?decoder=`` overrides it)
=====================================  ==========================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

PREFIX = "TEXT_RECOGNIZER_"


def available_cpus() -> int:
    """CPUs this process may run on (respects affinity masks and container cpusets)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Settings:
    checkpoint: Path | None = None
    device: str = "cpu"
    max_body_bytes: int = 10 * 2**20
    max_pixels: int = 16_000_000
    max_side: int = 20_000
    max_batch: int = 32
    workers: int = 0  # 0: choose from the CPU count
    torch_threads: int = 0  # 0: CPUs // workers
    max_queue: int = 256
    batch_size: int = 16
    decoder: str = "greedy"

    def __post_init__(self) -> None:
        cpus = available_cpus()
        if self.workers == 0:
            # Measured on 2 CPUs: torch ops issued from a non-main thread with 2 OpenMP threads ran
            # ~1.7x *slower* than with 1 (90 vs 53 ms a line), so prefer parallel workers of few threads.
            object.__setattr__(self, "workers", min(cpus, 4))
        if self.torch_threads == 0:
            object.__setattr__(self, "torch_threads", max(1, cpus // self.workers))
        if self.decoder not in ("greedy", "beam"):
            raise ValueError(f"{PREFIX}DECODER must be 'greedy' or 'beam', got {self.decoder!r}")
        for name in ("max_body_bytes", "max_pixels", "max_side", "max_batch", "workers", "torch_threads", "max_queue", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{PREFIX}{name.upper()} must be at least 1, got {getattr(self, name)}")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Build from ``TEXT_RECOGNIZER_*`` variables; a malformed value raises ``ValueError`` naming it."""
        environ = os.environ if environ is None else environ
        values: dict = {}
        for f in fields(cls):
            key = PREFIX + f.name.upper()
            raw = environ.get(key, "").strip()
            if not raw:
                continue
            if f.name == "checkpoint":
                values[f.name] = Path(raw)
            elif f.name in ("device", "decoder"):
                values[f.name] = raw
            else:
                try:
                    values[f.name] = int(raw.replace("_", ""))
                except ValueError:
                    raise ValueError(f"{key} must be an integer, got {raw!r}") from None
        return cls(**values)
