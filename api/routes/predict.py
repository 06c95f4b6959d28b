"""Recognition routes: one line, a batch with one result (or error) per image, or a whole page.

The app puts its access-control dependencies (API keys, rate limit; see ``api/security.py``) in
front of this router when they are configured. Decoder options (``decoder=``, ``readings=``, ``language=``) belong
here too.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.documents import FILE_MEDIA_TYPES
from api.errors import APIError
from api.imaging import ALLOWED_TEXT
from api.inference import ms, run_job, run_page_job
from api.inputs import batch_images, single_image
from api.middleware import START_KEY
from api.schemas import (
    Base64BatchRequest,
    Base64ImageRequest,
    Base64Item,
    BatchItem,
    BatchPrediction,
    DocumentPrediction,
    ErrorResponse,
    PagePrediction,
    Prediction,
)
from api.serving import ServingDep
from text_recognizer.decoding.language import AUTO, LanguageError, parse_language

router = APIRouter(tags=["recognition"])

_ERRORS = {
    400: {
        "model": ErrorResponse,
        "description": "not an image, truncated or corrupt image, empty file, invalid base64, malformed body",
    },
    401: {"model": ErrorResponse, "description": "API keys are configured and the request has no valid key"},
    413: {
        "model": ErrorResponse,
        "description": "body over TEXT_RECOGNIZER_MAX_BODY_BYTES, image over the pixel or "
        "side limits (or a decompression bomb), too many images",
    },
    415: {
        "model": ErrorResponse,
        "description": f"an image format other than {ALLOWED_TEXT}, or an unsupported Content-Type",
    },
    422: {
        "model": ErrorResponse,
        "description": "a required field (file, files, image, images) is missing or of the wrong type; decoder, "
        "readings or language is not one of theirs (language_unavailable: beam search in a language the model has "
        "no decoder bundle for, or whose letters its alphabet lacks)",
    },
    429: {"model": ErrorResponse, "description": "over TEXT_RECOGNIZER_RATE_LIMIT; see the Retry-After header"},
    503: {
        "model": ErrorResponse,
        "description": "the model is still loading (model_not_ready) or too many requests "
        "are waiting (overloaded); see the Retry-After header",
    },
}
_BATCH_ERRORS = {k: v for k, v in _ERRORS.items() if k not in (400, 415)} | {
    415: {"model": ErrorResponse, "description": "a Content-Type other than multipart/form-data or application/json"}
}

_IMAGE_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary", "description": f"one line image ({ALLOWED_TEXT})"}
                },
            }
        },
        "application/json": {"schema": Base64ImageRequest.model_json_schema()},
        "image/*": {"schema": {"type": "string", "format": "binary"}},
    },
}
_BATCH_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {"type": "string", "format": "binary"},
                        "description": "line images",
                    }
                },
            }
        },
        "application/json": {
            "schema": {  # written out: Pydantic's schema would point into its own $defs
                "type": "object",
                "required": ["images"],
                "properties": {
                    "images": {
                        "type": "array",
                        "minItems": 1,
                        "description": Base64BatchRequest.model_fields["images"].description,
                        "items": {"anyOf": [{"type": "string"}, Base64Item.model_json_schema()]},
                    }
                },
                "examples": Base64BatchRequest.model_config["json_schema_extra"]["examples"],
            }
        },
    },
}


def decoder_choice(decoder: str | None, serving) -> str:
    """``?decoder=greedy|beam``, else the server's ``TEXT_RECOGNIZER_DECODER``; unknown names are a 422."""
    if decoder is None:
        return serving.settings.decoder
    if decoder not in ("greedy", "beam"):
        raise APIError(422, "unknown_decoder", f"decoder must be 'greedy' or 'beam', got {decoder!r}")
    return decoder


_DECODER_HELP = "greedy or beam (beam search with the model's language model); default: TEXT_RECOGNIZER_DECODER"


def language_choice(language: str | None, decoder: str, serving) -> tuple[str | None, str | None]:
    """``?language=``: ``(the language asked for, what it means with decoder)``. ``None`` asks for the server's
    ``TEXT_RECOGNIZER_LANGUAGE`` (else the model's default); greedy decoding reads the same in every language the
    model has. A malformed value is a 422 ``bad_language``; with any decoder, a language the model has no bundle for
    (or cannot write) is a 422 ``language_unavailable`` naming those it has."""
    try:
        asked = parse_language(language)
    except LanguageError:
        raise APIError(422, "bad_language", f"language must be {AUTO!r} or an ISO 639-1 code such as 'en' or 'fr', "
                       f"got {language!r}") from None
    try:
        return asked, serving.recognizer.language_for(decoder, asked)
    except LanguageError as error:
        raise APIError(422, "language_unavailable", str(error)) from None


_LANGUAGE_HELP = ("the language models of decoder=beam: an ISO 639-1 code the model has a decoder bundle for (see "
                  "/v1/model's languages), or auto: per line (per page on /v1/predict/page), the language whose "
                  "character LM suits the greedy reading best; default: TEXT_RECOGNIZER_LANGUAGE, else the model's "
                  "own language. Greedy decoding reads alike in every language and ignores it")


def readings_choice(readings: str | None, serving, language: str | None = None) -> int:
    """``?readings=1|3``, else the server's ``TEXT_RECOGNIZER_READINGS``; anything else, or 3 where the model's
    decoder bundle (of ``language``, as ``language_choice`` resolved it) has no settings for it, is a 422."""
    if readings is not None and readings not in ("1", "3"):
        raise APIError(422, "bad_readings", f"readings must be 1 or 3, got {readings!r}")
    count = serving.settings.readings if readings is None else int(readings)
    if count not in serving.recognizer.readings_available(language):
        where = "" if language in (None, "auto") else f" in {language!r}"
        raise APIError(422, "readings_unavailable", f"this server's model has no decoder settings for 3 readings per "
                       f"line{where}; use readings=1")
    return count


_READINGS_HELP = ("1 or 3: read each line once, or three times (as it is, moved up, moved down) and decode the mean: "
                  "fewer errors for three times the model's work; default: TEXT_RECOGNIZER_READINGS")


@router.post("/v1/predict", response_model=Prediction, responses=_ERRORS, openapi_extra={"requestBody": _IMAGE_BODY})
async def predict(
    request: Request,
    serving: ServingDep,
    decoder: str | None = Query(None, description=_DECODER_HELP),
    readings: str | None = Query(None, description=_READINGS_HELP),
    language: str | None = Query(None, description=_LANGUAGE_HELP, examples=["auto", "en", "fr"]),
) -> Prediction:
    """Recognise one line: multipart field ``file``, JSON ``{"image": base64 or data URL}``, or a raw image body."""
    decoder = decoder_choice(decoder, serving)
    language, resolved = language_choice(language, decoder, serving)
    readings = readings_choice(readings, serving, resolved)
    item = await single_image(request)
    result = await run_job(request, serving, [item], decoder, readings, language)
    if item.error is not None:
        raise item.error
    return Prediction(
        **result["items"][0]["prediction"],
        model_version=serving.provenance.version,
        elapsed_ms=_elapsed(request),
        inference_ms=result["inference_ms"],
        preprocess_ms=result["preprocess_ms"],
        queue_ms=result["queue_ms"],
    )


@router.post(
    "/v1/predict/batch",
    response_model=BatchPrediction,
    responses=_BATCH_ERRORS,
    openapi_extra={"requestBody": _BATCH_BODY},
)
async def predict_batch(
    request: Request,
    serving: ServingDep,
    decoder: str | None = Query(None, description=_DECODER_HELP),
    readings: str | None = Query(None, description=_READINGS_HELP),
    language: str | None = Query(None, description=_LANGUAGE_HELP, examples=["auto", "en", "fr"]),
) -> BatchPrediction:
    """Recognise several lines (multipart ``files`` or JSON ``{"images": [...]}``) as one padded batch.

    The answer is 200 whenever the request itself is well formed: each image gets its own result, in
    request order, with its file name (multipart) or ``id`` (JSON objects) and either a ``prediction``
    or an ``error`` ({code, detail, status}), so one corrupt image never fails the others.
    """
    decoder = decoder_choice(decoder, serving)
    language, resolved = language_choice(language, decoder, serving)
    readings = readings_choice(readings, serving, resolved)
    items = await batch_images(request, serving.settings.max_batch)
    result = await run_job(request, serving, items, decoder, readings, language)
    for item in items:
        if item.error is not None:  # a single request's error is counted by the error handler
            request.app.state.metrics.rejected.labels(item.error.code).inc()
    return BatchPrediction(
        results=[BatchItem(**item) for item in result["items"]],
        model_version=serving.provenance.version,
        elapsed_ms=_elapsed(request),
        inference_ms=result["inference_ms"],
        preprocess_ms=result["preprocess_ms"],
        queue_ms=result["queue_ms"],
    )


def _elapsed(request: Request) -> float:
    return ms(time.perf_counter() - request.scope.get(START_KEY, time.perf_counter()))


PAGE_FORMATS = ("json", "page", "alto", "pdf", "hocr")
_FORMAT_HELP = ("json (default): the page with its lines, polygons, words and timings (for a PDF: every page); "
                "page: PAGE-XML 2019-07-15; alto: ALTO 4.4 (both application/xml, valid against their schemas; one "
                "page); pdf: a searchable PDF (the page as sent, an invisible text layer on it); hocr: hOCR "
                "(application/xhtml+xml)")
_DPI_HELP = ("for a PDF: the resolution its pages are read at (default: each page's scan resolution, or 300 for a "
             "page without a scan)")
_PAGE_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary",
                             "description": f"a photo or scan of a handwritten page ({ALLOWED_TEXT}), or a PDF of "
                             "pages"}
                },
            }
        },
        "application/json": {"schema": Base64ImageRequest.model_json_schema()},
        "image/*": {"schema": {"type": "string", "format": "binary"}},
        "application/pdf": {"schema": {"type": "string", "format": "binary"}},
    },
}
_XML = {"schema": {"type": "string"}, "example": '<?xml version="1.0" encoding="UTF-8"?>\n<PcGts ...>...</PcGts>'}
_PAGE_RESPONSES = {
    200: {
        "description": "the page read: JSON by default (for a PDF: DocumentPrediction, every page); PAGE-XML or "
                       "ALTO with ?format=page|alto; a searchable PDF with ?format=pdf; hOCR with ?format=hocr",
        "content": {"application/xml": _XML, "application/pdf": {"schema": {"type": "string", "format": "binary"}},
                    "application/xhtml+xml": {"schema": {"type": "string"}}},
    },
    **_ERRORS,
    422: {"model": ErrorResponse,
          "description": "the field 'file' or 'image' is missing, or decoder, readings, language or format is not one "
          "of theirs (language_unavailable: beam search in a language the model has no decoder bundle for; "
          "one_page_format: page or alto for a PDF of several pages)"},
    501: {"model": ErrorResponse,
          "description": "the server lacks the packages for pages (scipy), for the XML formats (lxml) or for PDFs "
          "(pypdfium2)"},
}


def format_choice(fmt: str) -> str:
    """``?format=json|page|alto`` (default json); anything else is a 422."""
    if fmt not in PAGE_FORMATS:
        raise APIError(422, "unknown_format", f"format must be one of {', '.join(PAGE_FORMATS)}, got {fmt!r}")
    return fmt


@router.post(
    "/v1/predict/page",
    response_model=PagePrediction | DocumentPrediction,
    responses=_PAGE_RESPONSES,
    openapi_extra={"requestBody": _PAGE_BODY},
)
async def predict_page(
    request: Request,
    serving: ServingDep,
    decoder: str | None = Query(None, description=_DECODER_HELP),
    readings: str | None = Query(None, description=_READINGS_HELP),
    language: str | None = Query(None, description=_LANGUAGE_HELP, examples=["auto", "en", "fr"]),
    fmt: str = Query("json", alias="format", description=_FORMAT_HELP, json_schema_extra={"enum": list(PAGE_FORMATS)}),
    dpi: float | None = Query(None, gt=0, le=1200, description=_DPI_HELP),
):
    """Read a whole page: find its text lines, read them in reading order, and return each with its polygon,
    baseline, text, confidence and words (polygons in page pixels).

    The page comes as the line routes take an image (multipart ``file``, JSON ``{"image": base64}`` or a raw
    image body) within the same body, pixel and side limits. A line that cannot be cut or read is returned
    with an ``error`` and no text; it never fails the page. A page without writing gives zero lines.

    A PDF is taken the same ways (or as an ``application/pdf`` body): every page is read, up to the server's page
    limit, each within the pixel limit, and the JSON answer lists the pages. Encrypted or broken PDFs are a 400,
    too many pages a 413.
    """
    decoder = decoder_choice(decoder, serving)
    language, resolved = language_choice(language, decoder, serving)
    readings = readings_choice(readings, serving, resolved)
    fmt = format_choice(fmt)
    item = await single_image(request, pdf=True)
    result = await run_page_job(request, serving, item, decoder, readings, fmt, language, dpi)
    version = serving.provenance.version
    if fmt != "json":
        media_type = FILE_MEDIA_TYPES.get(fmt, "application/xml")
        return Response(result["body"], media_type=media_type, headers={"X-Model-Version": version})
    answer = DocumentPrediction if "pages" in result["body"] else PagePrediction
    return answer(
        **result["body"],
        model_version=version,
        elapsed_ms=_elapsed(request),
        segment_ms=result["segment_ms"],
        inference_ms=result["inference_ms"],
        preprocess_ms=result["preprocess_ms"],
        queue_ms=result["queue_ms"],
    )
