"""The service's two loggers, each writing to stderr whatever uvicorn's log level is:
``text_recognizer.api`` (startup, model loading, unexpected errors; plain text lines) and
``text_recognizer.api.access`` (one JSON object per line, written by ``api/access_log.py``)."""

from __future__ import annotations

import logging
import sys

SERVICE = "text_recognizer.api"
ACCESS = "text_recognizer.api.access"


def service_logger() -> logging.Logger:
    return _stderr_logger(SERVICE, "%(asctime)s %(levelname)s %(name)s: %(message)s")


def access_logger() -> logging.Logger:
    return _stderr_logger(ACCESS, "%(message)s")


def _stderr_logger(name: str, fmt: str) -> logging.Logger:
    """Set up once: an INFO-level stderr handler, not propagated (uvicorn configures only its own loggers)."""
    logger = logging.getLogger(name)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(fmt))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger
