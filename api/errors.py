"""The API's one error type and the handlers that turn every failure into the same JSON shape.

Every error a client sees is ``{"error": "<code>", "detail": "<what was wrong>"}`` with a 4xx or
503 status: bad images, malformed bodies, missing keys, rate limits and a model that is not ready
all raise :class:`APIError`; FastAPI's own validation and routing errors are mapped onto the same
shape here, so clients parse one format.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.logs import service_logger

logger = service_logger()

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}


class APIError(Exception):
    """A request the server will not (or cannot yet) serve: ``status``, machine ``code``, ``detail``
    for people, and optional response ``headers`` (``Retry-After``, ``WWW-Authenticate``)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers

    def as_item(self) -> dict:
        """The error object of one item in a batch answer."""
        return {"code": self.code, "detail": self.detail, "status": self.status}


def error_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


def describe_validation(errors) -> str:
    """Pydantic's error list as one short sentence naming the fields."""
    parts = []
    for e in list(errors)[:5]:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI, metrics) -> None:
    """Register the handlers; ``metrics.rejected`` counts rejected inputs by code."""

    async def api_error(request: Request, error: APIError) -> JSONResponse:
        if 400 <= error.status < 500:
            metrics.rejected.labels(error.code).inc()
        return error_response(error.status, error.code, error.detail, error.headers)

    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(error.status_code, "bad_request")
        if error.status_code == 413:
            metrics.rejected.labels(code).inc()
        return error_response(error.status_code, code, str(error.detail), getattr(error, "headers", None))

    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return error_response(422, "validation_error", describe_validation(error.errors()))

    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s", request.url.path)
        return error_response(
            500, "internal_error", f"internal error ({type(error).__name__}); the server keeps running"
        )

    app.add_exception_handler(APIError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, unexpected)
