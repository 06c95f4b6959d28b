"""FastAPI app: ``uvicorn api.app:app``.

The model is loaded once, in the lifespan, from ``TEXT_RECOGNIZER_CHECKPOINT`` or the bundled
default; a missing or corrupt checkpoint stops the server at startup with the reason. Image
decoding, the stem and the model run in a small thread pool (``TEXT_RECOGNIZER_WORKERS``
threads, torch limited to ``TEXT_RECOGNIZER_TORCH_THREADS``) so the event loop stays free and
concurrent requests never oversubscribe the CPU. See ``api/settings.py`` for every limit.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import swagger_ui_bundle
import torch
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.imaging import ALLOWED_TEXT, ImageInputError, decode_base64, decode_image, set_pillow_limits, upright_size
from api.metrics import Metrics
from api.middleware import START_KEY, LimitsAndMetricsMiddleware
from api.schemas import (
    Base64BatchRequest,
    Base64ImageRequest,
    BatchPrediction,
    ErrorResponse,
    Health,
    LineResult,
    ModelInfo,
    Prediction,
)
from api.settings import Settings
from text_recognizer import __version__
from text_recognizer.checkpoint import CheckpointError
from text_recognizer.recognizer import LineRecognizer

logger = logging.getLogger("text_recognizer.api")
STATIC = Path(__file__).parent / "static"


class StartupError(RuntimeError):
    """The server cannot start (no model, bad checkpoint, bad settings)."""


@dataclass
class Serving:
    """What the lifespan sets up: the model, its identity and the inference pool."""

    settings: Settings
    recognizer: LineRecognizer
    model_version: str
    sha256: str
    library_version: str | None
    executor: ThreadPoolExecutor
    semaphore: asyncio.Semaphore
    waiting: int = 0
    info: dict = field(default_factory=dict)


def load_serving(settings: Settings) -> Serving:
    """Load the checkpoint and warm the model up, or raise ``StartupError`` saying what to do."""
    torch.set_num_threads(settings.torch_threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set (or parallel work already ran): keep what is there
        pass
    set_pillow_limits(settings.max_pixels)
    try:
        recognizer = LineRecognizer(settings.checkpoint, device=settings.device, batch_size=settings.max_batch,
                                    decoder=settings.decoder)
    except CheckpointError as error:
        source = "TEXT_RECOGNIZER_CHECKPOINT" if settings.checkpoint is not None else "the bundled default model"
        raise StartupError(f"cannot load the model ({source}): {error}") from None
    except Exception as error:  # e.g. an unavailable device
        raise StartupError(f"cannot load the model from {settings.checkpoint}: {type(error).__name__}: {error}") from None
    digest = hashlib.sha256()
    with open(recognizer.path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    sha = digest.hexdigest()
    try:  # the writer's library version, without a second full load
        library_version = torch.load(recognizer.path, map_location="cpu", weights_only=True).get("library_version")
    except Exception:
        library_version = None
    warm = torch.zeros(1, recognizer.height, recognizer.height * 4)
    recognizer.predict_tensors([warm])  # first call allocates; keep that off the first request
    return Serving(
        settings=settings, recognizer=recognizer, model_version=f"{recognizer.path.stem}-{sha[:12]}", sha256=sha,
        library_version=library_version,
        executor=ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="inference"),
        semaphore=asyncio.Semaphore(settings.workers),
    )


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


_ERRORS = {
    400: {"model": ErrorResponse, "description": "not an image, truncated or corrupt image, empty file, invalid base64, malformed body"},
    413: {"model": ErrorResponse, "description": "body over TEXT_RECOGNIZER_MAX_BODY_BYTES, image over the pixel or side limits (or a decompression bomb), too many images"},
    415: {"model": ErrorResponse, "description": f"an image format other than {ALLOWED_TEXT}, or an unsupported Content-Type"},
    422: {"model": ErrorResponse, "description": "a required field (file, files, image, images) is missing or of the wrong type"},
    503: {"model": ErrorResponse, "description": "too many requests waiting for the model; retry later"},
}

_IMAGE_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
            "file": {"type": "string", "format": "binary", "description": f"one line image ({ALLOWED_TEXT})"}}}},
        "application/json": {"schema": Base64ImageRequest.model_json_schema()},
        "image/*": {"schema": {"type": "string", "format": "binary"}},
    },
}
_BATCH_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {"schema": {"type": "object", "required": ["files"], "properties": {
            "files": {"type": "array", "items": {"type": "string", "format": "binary"}, "description": "line images, in order"}}}},
        "application/json": {"schema": Base64BatchRequest.model_json_schema()},
    },
}


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app; ``settings`` default to the ``TEXT_RECOGNIZER_*`` environment variables."""
    metrics = Metrics()
    resolved = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        try:
            serving = await asyncio.to_thread(load_serving, resolved)
        except StartupError as error:
            logger.error("text recognizer API startup failed: %s", error)
            raise StartupError(str(error)) from None
        app.state.serving = serving
        logger.info("serving %s on %s (%d workers x %d torch threads)", serving.model_version, resolved.device,
                    resolved.workers, resolved.torch_threads)
        try:
            yield
        finally:
            serving.executor.shutdown(wait=True, cancel_futures=True)

    app = FastAPI(
        title="Handwritten text-line recognizer",
        version=__version__,
        description="POST an image of one handwritten text line, get its text back. CRNN + CTC; see docs/api.md.",
        lifespan=lifespan,
        docs_url=None,  # served below from local files: no CDN is reachable offline
    )
    app.state.metrics = metrics
    app.add_middleware(LimitsAndMetricsMiddleware, max_body_bytes=resolved.max_body_bytes, metrics=metrics)

    @app.exception_handler(ImageInputError)
    async def image_error(request: Request, error: ImageInputError):
        metrics.rejected.labels(error.code).inc()
        return _error(error.status, error.code, error.message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        code = {413: "body_too_large", 404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "bad_request")
        if error.status_code == 413:
            metrics.rejected.labels(code).inc()
        return JSONResponse({"error": code, "detail": str(error.detail)}, status_code=error.status_code, headers=getattr(error, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError):
        return _error(422, "validation_error", _describe(error.errors()))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        logger.exception("unhandled error on %s", request.url.path)
        return _error(500, "internal_error", f"internal error ({type(error).__name__}); the server keeps running")

    def serving_of(request: Request) -> Serving:
        serving = getattr(request.app.state, "serving", None)
        if serving is None:
            raise ImageInputError(503, "model_not_loaded", "the model is not loaded yet")
        return serving

    async def run_job(request: Request, blobs: list[tuple[str, bytes]], decoder: str | None = None) -> dict:
        serving = serving_of(request)
        if serving.waiting >= serving.settings.max_queue:
            raise ImageInputError(503, "overloaded", f"{serving.waiting} requests are already waiting for the model; retry later")
        queued = time.perf_counter()
        serving.waiting += 1
        metrics.queue.inc()
        try:
            await serving.semaphore.acquire()
        finally:
            serving.waiting -= 1
            metrics.queue.dec()
        try:
            queue_s = time.perf_counter() - queued
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(serving.executor, _recognise, serving, blobs, decoder)
        finally:
            serving.semaphore.release()
        metrics.inference.observe(result["inference_s"])
        metrics.preprocess.observe(result["preprocess_s"])
        metrics.images.inc(len(blobs))
        start = request.scope.get(START_KEY, queued)
        return {**result, "queue_ms": _ms(queue_s), "elapsed_ms": _ms(time.perf_counter() - start),
                "inference_ms": _ms(result["inference_s"]), "preprocess_ms": _ms(result["preprocess_s"])}

    @app.get("/health", response_model=Health, responses={503: _ERRORS[503]}, tags=["service"])
    async def health(request: Request) -> Health:
        """200 once the model is loaded (the server does not accept requests before that)."""
        serving = serving_of(request)
        s = serving.settings
        return Health(status="ok", model_loaded=True, model_version=serving.model_version, device=s.device,
                      workers=s.workers, torch_threads=s.torch_threads)

    @app.get("/v1/model", response_model=ModelInfo, tags=["service"])
    async def model_info(request: Request) -> ModelInfo:
        """Which model is serving: version, character set, training data, reported CER."""
        serving = serving_of(request)
        r = serving.recognizer
        meta = r.metadata
        return ModelInfo(
            model_version=serving.model_version, checkpoint=r.path.name, sha256=serving.sha256,
            library_version=serving.library_version, kind=r.config.kind, input_height=r.height,
            num_parameters=sum(p.numel() for p in r.model.parameters()), charset=r.codec.charset,
            num_classes=r.codec.num_classes, loss=r.loss, training_data=_opt_str(meta.get("data")),
            val_cer=meta.get("val_cer"), epoch=meta.get("epoch"), step=meta.get("step"), config=r.config.to_dict(),
        )

    @app.post("/v1/predict", response_model=Prediction, responses=_ERRORS, openapi_extra={"requestBody": _IMAGE_BODY}, tags=["recognition"])
    async def predict(request: Request, decoder: str | None = Query(None, description=_DECODER_HELP)) -> Prediction:
        """Recognise one line: multipart field ``file``, JSON ``{"image": base64 or data URL}``, or a raw ``image/*`` body."""
        decoder = _decoder_choice(serving_of(request), decoder)
        blob = await _single_image(request)
        result = await run_job(request, [blob], decoder)
        line = result["lines"][0]
        return Prediction(text=line["text"], confidence=line["confidence"], words=line["words"], chars=line["chars"],
                          decoder=decoder, model_version=serving_of(request).model_version,
                          image_width=line["image_width"], image_height=line["image_height"], elapsed_ms=result["elapsed_ms"],
                          inference_ms=result["inference_ms"], preprocess_ms=result["preprocess_ms"], queue_ms=result["queue_ms"])

    @app.post("/v1/predict/batch", response_model=BatchPrediction, responses=_ERRORS, openapi_extra={"requestBody": _BATCH_BODY}, tags=["recognition"])
    async def predict_batch(
        request: Request, decoder: str | None = Query(None, description=_DECODER_HELP)
    ) -> BatchPrediction:
        """Recognise several lines (multipart ``files`` or JSON ``{"images": [...]}``) as one padded batch; results in request order."""
        serving = serving_of(request)
        decoder = _decoder_choice(serving, decoder)
        blobs = await _batch_images(request, serving.settings.max_batch)
        result = await run_job(request, blobs, decoder)
        return BatchPrediction(results=[LineResult(**line) for line in result["lines"]], decoder=decoder,
                               model_version=serving.model_version,
                               elapsed_ms=result["elapsed_ms"], inference_ms=result["inference_ms"],
                               preprocess_ms=result["preprocess_ms"], queue_ms=result["queue_ms"])

    @app.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=_PAGE_HEADERS)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} - API docs",
            swagger_js_url="/static/swagger/swagger-ui-bundle.js", swagger_css_url="/static/swagger/swagger-ui.css",
            swagger_favicon_url="/static/swagger/favicon-32x32.png",
        )

    app.mount("/static/swagger", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="swagger")
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


_DECODER_HELP = ("greedy or beam (beam search with the model's language model); "
                 "default: the server's TEXT_RECOGNIZER_DECODER")


def _decoder_choice(serving: Serving, decoder: str | None) -> str:
    """The request's decoder, or the server's default; an unknown name is the client's error (422)."""
    if decoder is None:
        return serving.settings.decoder
    if decoder not in ("greedy", "beam"):
        raise ImageInputError(422, "unknown_decoder", f"decoder must be 'greedy' or 'beam', got {decoder!r}")
    return decoder


def _recognise(serving: Serving, blobs: list[tuple[str, bytes]], decoder: str | None = None) -> dict:
    """Runs in a worker thread: decode every image, run the stem, then one padded forward pass."""
    s = serving.settings
    recognizer = serving.recognizer
    t0 = time.perf_counter()
    tensors, sizes = [], []
    for what, data in blobs:
        image = decode_image(data, max_pixels=s.max_pixels, max_side=s.max_side, what=what)
        width, height = upright_size(image)
        if round(width * recognizer.height / height) > s.max_side:
            raise ImageInputError(413, "image_too_large", f"{what}: {width}x{height} is too wide for its height: resized to "
                                  f"{recognizer.height} px high it would be wider than {s.max_side} pixels")
        try:
            tensors.append(recognizer.preprocess(image))
        except Exception as error:  # exotic modes, broken EXIF, ...
            raise ImageInputError(400, "unprocessable_image", f"{what}: cannot process this {image.format} image (mode {image.mode}): {error}") from None
        finally:
            image.close()
        sizes.append((width, height))
    t1 = time.perf_counter()
    lines = recognizer.predict_tensors(tensors, sizes, decoder=decoder)
    t2 = time.perf_counter()
    return {
        "lines": [{**line.to_dict(), "confidence": min(1.0, max(0.0, float(line.confidence))),
                   "image_width": w, "image_height": h} for line, (w, h) in zip(lines, sizes)],
        "preprocess_s": t1 - t0, "inference_s": t2 - t1,
    }


async def _single_image(request: Request) -> tuple[str, bytes]:
    kind = _content_type(request)
    if kind == "multipart/form-data":
        form = await request.form(max_files=4, max_fields=8)
        try:
            item = form.get("file")
            if item is None:
                raise ImageInputError(422, "missing_field", f"multipart field 'file' is missing (got fields {sorted(form.keys())}); send the image as form field 'file'")
            if not isinstance(item, UploadFile):
                raise ImageInputError(422, "missing_field", "multipart field 'file' must be a file upload, not a text value")
            return f"file {item.filename!r}" if item.filename else "file", await item.read()
        finally:
            await form.close()
    if kind == "application/json":
        body = _parse_json(await request.body(), Base64ImageRequest)
        return "image", decode_base64(body.image, "image")
    if kind.startswith("image/"):
        return "body", await request.body()
    raise ImageInputError(415, "unsupported_media_type", f"Content-Type {kind or '(none)'} is not accepted; send multipart/form-data with a "
                          "'file' field, application/json {\"image\": \"<base64>\"}, or the raw image with an image/* type")


async def _batch_images(request: Request, max_batch: int) -> list[tuple[str, bytes]]:
    kind = _content_type(request)
    if kind == "multipart/form-data":
        form = await request.form(max_files=max_batch + 1, max_fields=max_batch + 8)
        try:
            items = form.getlist("files")
            if not items:
                raise ImageInputError(422, "missing_field", f"multipart field 'files' is missing (got fields {sorted(form.keys())}); send each image as a 'files' field")
            if len(items) > max_batch:
                raise ImageInputError(413, "too_many_images", f"{len(items)} images in one batch; the limit is {max_batch}")
            blobs = []
            for i, item in enumerate(items):
                if not isinstance(item, UploadFile):
                    raise ImageInputError(422, "missing_field", f"files[{i}] must be a file upload, not a text value")
                blobs.append((f"files[{i}]" + (f" {item.filename!r}" if item.filename else ""), await item.read()))
            return blobs
        finally:
            await form.close()
    if kind == "application/json":
        body = _parse_json(await request.body(), Base64BatchRequest)
        if len(body.images) > max_batch:
            raise ImageInputError(413, "too_many_images", f"{len(body.images)} images in one batch; the limit is {max_batch}")
        return [(f"images[{i}]", decode_base64(text, f"images[{i}]")) for i, text in enumerate(body.images)]
    raise ImageInputError(415, "unsupported_media_type", f"Content-Type {kind or '(none)'} is not accepted; send multipart/form-data "
                          "with 'files' fields or application/json {\"images\": [\"<base64>\", ...]}")


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _parse_json(raw: bytes, model):
    if not raw.strip():
        raise ImageInputError(422, "missing_field", f"empty JSON body; expected {_shape(model)}")
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        if any(e["type"] == "json_invalid" for e in error.errors()):
            raise ImageInputError(400, "invalid_json", f"the body is not valid JSON: {error.errors()[0]['msg']}") from None
        raise ImageInputError(422, "missing_field", f"{_describe(error.errors())}; expected {_shape(model)}") from None


def _shape(model) -> str:
    return '{"image": "<base64 or data URL>"}' if model is Base64ImageRequest else '{"images": ["<base64 or data URL>", ...]}'


def _describe(errors) -> str:
    parts = []
    for e in errors[:5]:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _opt_str(value) -> str | None:
    if value is None:
        return None
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


app = create_app()
