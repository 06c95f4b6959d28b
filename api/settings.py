"""Serving settings, read once from environment variables (all optional).

=====================================  ==========================================================
``TEXT_RECOGNIZER_CHECKPOINT``          model checkpoint (default: the bundled ``default.pt``)
``TEXT_RECOGNIZER_DEVICE``              torch device (default ``cpu``)
``TEXT_RECOGNIZER_MAX_BODY_BYTES``      largest request body, bytes (default 10 MiB) -> 413
``TEXT_RECOGNIZER_MAX_PIXELS``          largest image, width x height (default 16 000 000) -> 413
``TEXT_RECOGNIZER_MAX_SIDE``            longest image side in pixels (default 20 000) -> 413
``TEXT_RECOGNIZER_MAX_BATCH``           most images in one batch request (default 32) -> 413
``TEXT_RECOGNIZER_BATCH_SIZE``          lines per forward pass when a batch request is run (default 16)
``TEXT_RECOGNIZER_WORKERS``             inference jobs running at once (default: CPUs, at most 4)
``TEXT_RECOGNIZER_TORCH_THREADS``       torch intra-op threads (default: CPUs // workers)
``TEXT_RECOGNIZER_MAX_QUEUE``           requests waiting for a worker before 503 (default 256)
``TEXT_RECOGNIZER_API_KEYS``            comma-separated API keys; set (or the file below) -> keys required
``TEXT_RECOGNIZER_API_KEYS_FILE``       file with one API key per line (``#`` comments allowed)
``TEXT_RECOGNIZER_RATE_LIMIT``          per-key (per-client without keys) limit, e.g. ``60/minute`` -> 429
``TEXT_RECOGNIZER_CORS_ORIGINS``        comma-separated origins allowed by CORS (default: none)
``TEXT_RECOGNIZER_ACCESS_LOG``          JSON access log lines on stderr (default ``true``)
``TEXT_RECOGNIZER_DECODER``             default decoder, ``greedy`` or ``beam`` (a request's ``?decoder=`` overrides it)
``TEXT_RECOGNIZER_READINGS``            1 (default) or 3: read every line three times and decode the mean (fewer
                                       errors, three times the model's work; ``text_recognizer.decoding.readings``)
``TEXT_RECOGNIZER_LANGUAGE``            default language of beam search, a code such as ``fr`` or ``auto`` (default:
                                       the model's own language); the
                                       model must have it (checked at startup); ``?language=`` overrides it
``TEXT_RECOGNIZER_DATA_DIR``            where collections of corrected pages are kept (SQLite + images; default
                                       ``~/.local/share/text_recognizer``; ``api/collections``)
``TEXT_RECOGNIZER_MAX_COLLECTION_PAGES`` pages one collection may hold (default 500) -> 409
=====================================  ==========================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from limits import parse as parse_rate_limit

from text_recognizer.decoding.language import AUTO, LanguageError, parse_language

PREFIX = "TEXT_RECOGNIZER_"
_POSITIVE = (
    "max_body_bytes",
    "max_pixels",
    "max_side",
    "max_batch",
    "batch_size",
    "workers",
    "torch_threads",
    "max_queue",
    "max_pdf_pages",
    "max_collection_pages",
)


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
    batch_size: int = 16
    workers: int = 0  # 0: choose from the CPU count
    torch_threads: int = 0  # 0: CPUs // workers
    max_queue: int = 256
    max_pdf_pages: int = 50  # pages of one uploaded PDF (the page route); each page within max_pixels
    api_keys: tuple[str, ...] = ()
    api_keys_file: Path | None = None
    rate_limit: str | None = None
    cors_origins: tuple[str, ...] = ()
    access_log: bool = True
    decoder: str = "greedy"  # greedy or beam; a request's ?decoder= overrides it
    readings: int = 1  # 1 or 3 readings per line (text_recognizer.decoding.readings)
    language: str | None = None  # a code or "auto"; None: the model's default (text_recognizer.decoding.bundle_set)
    data_dir: Path = Path("~/.local/share/text_recognizer").expanduser()  # collections (api/collections)
    max_collection_pages: int = 500

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
        if self.readings not in (1, 3):
            raise ValueError(f"{PREFIX}READINGS must be 1 or 3, got {self.readings!r}")
        try:
            object.__setattr__(self, "language", parse_language(self.language))
        except LanguageError:
            raise ValueError(f"{PREFIX}LANGUAGE must be {AUTO!r} or an ISO 639-1 code such as 'en' or 'fr', "
                             f"got {self.language!r}") from None
        for name in _POSITIVE:
            if getattr(self, name) < 1:
                raise ValueError(f"{PREFIX}{name.upper()} must be at least 1, got {getattr(self, name)}")
        if self.rate_limit is not None:
            try:
                parse_rate_limit(self.rate_limit)
            except ValueError:
                raise ValueError(
                    f"{PREFIX}RATE_LIMIT must look like '60/minute' or '10 per second', got {self.rate_limit!r}"
                ) from None

    def load_api_keys(self) -> frozenset[str]:
        """The configured keys (empty: access control off); a missing or empty key file is an error."""
        keys = set(self.api_keys)
        if self.api_keys_file is not None:
            try:
                lines = self.api_keys_file.read_text(encoding="utf-8").splitlines()
            except OSError as error:
                raise ValueError(f"{PREFIX}API_KEYS_FILE {self.api_keys_file} cannot be read: {error}") from None
            from_file = {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}
            if not from_file:
                raise ValueError(f"{PREFIX}API_KEYS_FILE {self.api_keys_file} holds no key (one key per line)")
            keys |= from_file
        return frozenset(keys)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Build from ``TEXT_RECOGNIZER_*`` variables; a malformed value raises ``ValueError`` naming it."""
        environ = os.environ if environ is None else environ
        values: dict = {}
        for f in fields(cls):
            key = PREFIX + f.name.upper()
            raw = environ.get(key, "").strip()
            if raw:
                values[f.name] = _parse(f.name, key, raw)
        return cls(**values)


def _parse(name: str, key: str, raw: str):
    """One environment value, typed by the field it sets."""
    if name in ("checkpoint", "api_keys_file", "data_dir"):
        return Path(raw).expanduser()
    if name in ("device", "rate_limit", "decoder", "language"):
        return raw
    if name in ("api_keys", "cors_origins"):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if name == "access_log":
        if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise ValueError(f"{key} must be true or false, got {raw!r}")
        return raw.lower() in ("1", "true", "yes", "on")
    try:
        return int(raw.replace("_", ""))
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from None
