"""A pure ASGI middleware: request-body size limit enforced while streaming, and HTTP metrics.

The limit is checked twice: against ``Content-Length`` before anything is read, and against the
bytes actually received, chunk by chunk, so a chunked or lying client is cut off at the limit too.
"""

from __future__ import annotations

import json
import time

from starlette.exceptions import HTTPException

START_KEY = "text_recognizer.start"


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` once the body passes the limit (an HTTPException, so that FastAPI's
    body parsing re-raises it as is and the exception handlers answer 413)."""

    def __init__(self, limit: int):
        super().__init__(413, f"request body exceeds the limit of {limit} bytes")


class LimitsAndMetricsMiddleware:
    def __init__(self, app, max_body_bytes: int, metrics=None):
        self.app, self.limit, self.metrics = app, max_body_bytes, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        scope[START_KEY] = start
        status = 500
        started = False

        async def send_wrapper(message):
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = message["status"], True
            await send(message)

        try:
            declared = _content_length(scope)
            if declared is not None and declared > self.limit:
                await _send_413(
                    send_wrapper,
                    f"request body of {declared} bytes (Content-Length) exceeds the limit of {self.limit} bytes",
                )
                return
            received = 0

            async def limited_receive():
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > self.limit:
                        raise BodyTooLarge(self.limit)
                return message

            try:
                await self.app(scope, limited_receive, send_wrapper)
            except BodyTooLarge as error:
                if started:
                    raise
                await _send_413(send_wrapper, error.detail)
        finally:
            if self.metrics is not None:
                route = scope.get("route")
                path = getattr(route, "path", None) or "unmatched"
                self.metrics.observe_request(scope["method"], path, status, time.perf_counter() - start)


def _content_length(scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_413(send, detail: str) -> None:
    body = json.dumps({"error": "body_too_large", "detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
