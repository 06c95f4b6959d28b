"""Running recognition jobs: queue for a slot in the inference pool, then, in a worker thread,
decode each image and run the stem (a bad image fails alone, as a per-item error) and one padded
forward pass over the good ones; or, for a page (``read_page``), decode it, find its lines and read
them with ``text_recognizer.page_reader.PageReader``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from typing import TypeVar

import torch
from fastapi import Request

from api.documents import FILE_MEDIA_TYPES, file_body, read_pdf
from api.errors import APIError
from api.imaging import decode_image, upright_size
from api.logs import service_logger
from api.serving import ImageInput, Serving
from text_recognizer.page_formats import page_json, render
from text_recognizer.page_reader import PageReader, default_segmenter
from text_recognizer.pdf import is_pdf

T = TypeVar("T")
logger = service_logger()


async def run_job(request: Request, serving: Serving, inputs: list[ImageInput], decoder: str | None = None,
                  readings: int | None = None, language: str | None = None) -> dict:
    """Queue for a pool slot (503 ``overloaded`` past ``max_queue``), then recognise in a thread."""
    metrics = request.app.state.metrics
    queue_s, result = await run_in_pool(request, serving, recognise, serving, inputs, decoder, readings, language)
    metrics.inference.observe(result["inference_s"])
    metrics.preprocess.observe(result["preprocess_s"])
    metrics.images.inc(sum(item["prediction"] is not None for item in result["items"]))
    request.state.image_sizes = [
        (p["image_width"], p["image_height"]) for p in (item["prediction"] for item in result["items"]) if p is not None
    ]
    return {
        **result,
        "queue_ms": ms(queue_s),
        "inference_ms": ms(result["inference_s"]),
        "preprocess_ms": ms(result["preprocess_s"]),
    }


async def run_in_pool(request: Request, serving: Serving, job: Callable[..., T], *args) -> tuple[float, T]:
    """Queue for a slot in the inference pool (503 ``overloaded`` once ``max_queue`` requests wait), then run
    ``job(*args)`` in a worker thread, off the event loop: ``(seconds queued, its result)``. Every route that
    runs the model goes through here, so lines, batches and pages share the same workers and limits."""
    metrics = request.app.state.metrics
    if serving.waiting >= serving.settings.max_queue:
        raise APIError(
            503,
            "overloaded",
            f"{serving.waiting} requests are already waiting for the model; retry later",
            headers={"Retry-After": "1"},
        )
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
        result = await asyncio.get_running_loop().run_in_executor(serving.executor, job, *args)
    finally:
        serving.semaphore.release()
    return queue_s, result


def recognise(serving: Serving, inputs: list[ImageInput], decoder: str | None = None,
              readings: int | None = None, language: str | None = None) -> dict:
    """Runs in a worker thread: decode each image and run the stem (a bad image fails alone), then
    one padded forward pass over the good ones (``language="auto"``: chosen per line). Items come back in
    input order."""
    recognizer = serving.recognizer
    t0 = time.perf_counter()
    tensors, sizes, good = [], [], []
    for item in inputs:
        if item.error is None:
            try:
                tensor, size = _prepare(serving, item)
                tensors.append(tensor)
                sizes.append(size)
                good.append(item.index)
            except APIError as error:
                item.error = error
    t1 = time.perf_counter()
    lines = (recognizer.predict_tensors(tensors, sizes, decoder=decoder, readings=readings, language=language)
             if tensors else [])
    t2 = time.perf_counter()
    predictions = {index: _line(line, size) for index, line, size in zip(good, lines, sizes)}
    items = [
        {
            "index": item.index,
            "filename": item.filename,
            "id": item.id,
            "prediction": predictions.get(item.index),
            "error": item.error.as_item() if item.error is not None else None,
        }
        for item in inputs
    ]
    return {"items": items, "preprocess_s": t1 - t0, "inference_s": t2 - t1}


def _prepare(serving: Serving, item: ImageInput) -> tuple[torch.Tensor, tuple[int, int]]:
    s, recognizer = serving.settings, serving.recognizer
    image = decode_image(item.data or b"", max_pixels=s.max_pixels, max_side=s.max_side, what=item.what)
    try:
        width, height = upright_size(image)
        if round(width * recognizer.height / height) > s.max_side:
            raise APIError(
                413,
                "image_too_large",
                f"{item.what}: {width}x{height} is too wide for its height: resized "
                f"to {recognizer.height} px high it would be wider than {s.max_side} pixels",
            )
        try:
            return recognizer.preprocess(image), (width, height)
        except Exception as error:  # exotic modes, broken EXIF, ...
            raise APIError(
                400,
                "unprocessable_image",
                f"{item.what}: cannot process this {image.format} image (mode {image.mode}): {error}",
            ) from None
    finally:
        image.close()


def _line(line, size: tuple[int, int]) -> dict:
    """A decoded line as the API returns it; ``words`` when the decoder gives per-word confidences."""
    result = {
        "text": line.text,
        "confidence": min(1.0, max(0.0, float(line.confidence))),
        "image_width": size[0],
        "image_height": size[1],
        "language": getattr(line, "language", None),
    }
    for key in ("words", "chars"):  # {text, confidence, start, end}, x in pixels of the uploaded image
        spans = getattr(line, key, None)
        if spans is not None:
            result[key] = [
                w.to_dict() if hasattr(w, "to_dict") else asdict(w) if is_dataclass(w) else dict(w) for w in spans
            ]
    return result


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def _timed_reader(serving: Serving) -> Callable:
    """``read(image, name, **options)`` -> ``(PageResult, seconds spent finding lines)``: a ``PageReader`` on the
    bundled segmenter, with the API's pixel limit (checked before decoding) as its page limit; 501 without one."""
    try:
        segment = default_segmenter()
    except (ImportError, OSError, ValueError) as error:  # no scipy, missing or foreign segmenter weights
        raise APIError(501, "pages_unavailable", f"this server cannot read pages: {error}") from None
    segmenting = [0.0]

    def timed_segment(page):
        start = time.perf_counter()
        try:
            return segment(page)
        finally:
            segmenting[0] += time.perf_counter() - start

    reader = PageReader(serving.recognizer, segmenter=timed_segment, max_pixels=serving.settings.max_pixels)

    def read(image, name: str, **options):
        before = segmenting[0]
        return reader.read(image, name=name, **options), segmenting[0] - before

    return read


def read_page(serving: Serving, item: ImageInput, decoder: str, readings: int, fmt: str,
              language: str | None = None, dpi: float | None = None) -> dict:
    """Runs in a worker thread: decode the page within the API's limits, read it (``PageReader``: find the
    lines, cut them, read them in width-sorted batches; ``language="auto"``: one language for the page) and
    render it in ``fmt`` (json: the page's dict; page/alto/hocr: XML bytes; pdf: a searchable PDF). A PDF goes to
    ``api.documents.read_pdf``, page by page. Lines that cannot be cut or read carry their ``error``; the page
    does not fail."""
    s = serving.settings
    options = {"decoder": decoder, "readings": readings, "language": language}
    t0 = time.perf_counter()
    if is_pdf(item.data or b""):
        read = _timed_reader(serving)
        result = read_pdf(serving, item, lambda image, name: read(image, name, **options), fmt, dpi)
        t1 = time.perf_counter()
        size = result["sizes"][0] if result["sizes"] else (0, 0)
        return {"body": result["body"], "size": size, "pages": result["pages"], "preprocess_s": result["render_s"],
                "segment_s": result["segment_s"], "inference_s": t1 - t0 - result["render_s"] - result["segment_s"]}
    image = decode_image(item.data or b"", max_pixels=s.max_pixels, max_side=s.max_side, what=item.what, kind="page")
    t1 = time.perf_counter()
    try:
        read = _timed_reader(serving)
        result, segment_s = read(image, item.filename or "image", **options)
    except APIError:
        raise
    except Exception as error:  # exotic modes, broken EXIF, ...: this image, not the server
        logger.warning("cannot read %s as a page: %s: %s", item.what, type(error).__name__, error)
        raise APIError(
            400, "unprocessable_image",
            f"{item.what}: cannot read this {image.format} image (mode {image.mode}) as a page: {error}",
        ) from None
    finally:
        image.close()
    t2 = time.perf_counter()
    if fmt in FILE_MEDIA_TYPES:
        body = file_body(fmt, [(item.data, result, None)])
    else:
        try:
            body = page_json(result) if fmt == "json" else render(result, fmt)
        except ImportError as error:
            raise APIError(501, "format_unavailable", f"this server cannot write {fmt}: {error}") from None
    return {
        "body": body,
        "size": (result.width, result.height),
        "pages": 1,
        "preprocess_s": t1 - t0,
        "segment_s": segment_s,
        "inference_s": t2 - t1 - segment_s,
    }


async def run_page_job(request: Request, serving: Serving, item: ImageInput, decoder: str, readings: int,
                       fmt: str, language: str | None = None, dpi: float | None = None) -> dict:
    """``read_page`` in the inference pool, with the metrics and access-log fields the line routes record."""
    metrics = request.app.state.metrics
    queue_s, result = await run_in_pool(request, serving, read_page, serving, item, decoder, readings, fmt,
                                        language, dpi)
    metrics.inference.observe(result["segment_s"] + result["inference_s"])
    metrics.preprocess.observe(result["preprocess_s"])
    metrics.images.inc(result["pages"])
    request.state.image_sizes = [result["size"]]
    return {
        **result,
        "queue_ms": ms(queue_s),
        "preprocess_ms": ms(result["preprocess_s"]),
        "segment_ms": ms(result["segment_s"]),
        "inference_ms": ms(result["inference_s"]),
    }
