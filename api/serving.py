"""The loaded model and its inference pool, and the dependency that hands them to the routes.

The model is loaded in the background once the server is up, so that liveness (``/health``)
answers at once while readiness (``/health/ready``) stays false until the model is loaded and
warmed; prediction routes answer 503 ``model_not_ready`` until then. Image decoding, the stem and
the model run in a small thread pool (``workers`` threads, torch limited to ``torch_threads``)
so the event loop stays free and concurrent requests never oversubscribe the CPU
(``api/inference.py`` runs the jobs).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated

import torch
from fastapi import Depends, Request

from api.errors import APIError
from api.imaging import set_pillow_limits
from api.logs import service_logger
from api.provenance import Provenance, read_provenance
from api.settings import Settings
from text_recognizer.checkpoint import CheckpointError
from text_recognizer.decoding.language import LanguageError
from text_recognizer.recognizer import LineRecognizer

logger = service_logger()
STARTUP_FAILURE = 3  # uvicorn's exit status for a failed startup


class StartupError(RuntimeError):
    """The model cannot be served (no model, bad checkpoint, unavailable device)."""


@dataclass
class Serving:
    """A loaded, warmed model with its provenance and the pool its jobs run in."""

    settings: Settings
    recognizer: LineRecognizer
    provenance: Provenance
    executor: ThreadPoolExecutor
    semaphore: asyncio.Semaphore
    waiting: int = 0


@dataclass
class ImageInput:
    """One image of a request: where it came from (for the answer) and its bytes, or why it has none."""

    index: int
    what: str  # names the image in error messages: "file 'a.png'", "images[2]"
    data: bytes | None = None
    filename: str | None = None
    id: str | None = None
    error: APIError | None = None


def load_serving(settings: Settings) -> Serving:
    """Load the checkpoint and warm the model up, or raise ``StartupError`` saying what to do."""
    torch.set_num_threads(settings.torch_threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set (or parallel work already ran): keep what is there
        pass
    set_pillow_limits(settings.max_pixels)
    try:
        recognizer = LineRecognizer(
            settings.checkpoint, device=settings.device, batch_size=settings.batch_size, decoder=settings.decoder,
            readings=settings.readings, language=settings.language,
        )
        recognizer.language_for("beam", None)  # TEXT_RECOGNIZER_LANGUAGE: one the model has, even for greedy
    except LanguageError as error:
        raise StartupError(f"TEXT_RECOGNIZER_LANGUAGE={settings.language}: {error}") from None
    except CheckpointError as error:
        source = "TEXT_RECOGNIZER_CHECKPOINT" if settings.checkpoint is not None else "the bundled default model"
        raise StartupError(f"cannot load the model ({source}): {error}") from None
    except Exception as error:  # e.g. an unavailable device
        raise StartupError(
            f"cannot load the model from {settings.checkpoint}: {type(error).__name__}: {error}"
        ) from None
    provenance = checkpoint_provenance(recognizer)
    warm = torch.zeros(1, recognizer.height, recognizer.height * 4)
    recognizer.predict_tensors([warm])  # first call allocates; keep that off the first request
    return Serving(
        settings=settings,
        recognizer=recognizer,
        provenance=provenance,
        executor=ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="inference"),
        semaphore=asyncio.Semaphore(settings.workers),
    )


def checkpoint_provenance(recognizer: LineRecognizer) -> Provenance:
    """Version, licence and data of the loaded checkpoint, read from its typed bundle
    (``text_recognizer.checkpoint.Checkpoint``): the one place that knows where they live."""
    bundle = recognizer.checkpoint
    metadata = {"version": bundle.provenance.model_version, "licence": bundle.licence, "data": bundle.provenance.data}
    return read_provenance(recognizer.path, {k: v for k, v in metadata.items() if v}, bundle.versions.get("package"))


@dataclass
class ModelState:
    """Loading, ready or failed: what the health routes report and the routes depend on."""

    serving: Serving | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)

    async def load(self, settings: Settings, loader: Callable[[Settings], Serving]) -> None:
        """Load in a thread; on failure log the reason and stop the process (exit status 3), as a
        failed startup would: a server that can never serve should not look alive."""
        try:
            self.serving = await asyncio.to_thread(loader, settings)
        except Exception as error:  # StartupError says what to do; anything else is reported as is
            self.error = str(error) if isinstance(error, StartupError) else f"{type(error).__name__}: {error}"
            logger.error("text recognizer API startup failed: %s", self.error)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(STARTUP_FAILURE)
        s = self.serving.settings
        logger.info(
            "serving %s on %s (%d workers x %d torch threads), ready after %.1f s (pid %d)",
            self.serving.provenance.version,
            s.device,
            s.workers,
            s.torch_threads,
            time.monotonic() - self.started,
            os.getpid(),
        )

    def close(self) -> None:
        if self.serving is not None:
            self.serving.executor.shutdown(wait=True, cancel_futures=True)


def get_serving(request: Request) -> Serving:
    """Dependency: the loaded model, or 503 ``model_not_ready`` while it is still loading."""
    state: ModelState = request.app.state.model
    if state.serving is None:
        raise APIError(
            503,
            "model_not_ready",
            "the model is still loading; retry shortly (see /health/ready)",
            headers={"Retry-After": "1"},
        )
    return state.serving


ServingDep = Annotated[Serving, Depends(get_serving)]  # a route parameter of this type gets the loaded model
