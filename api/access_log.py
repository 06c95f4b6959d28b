"""Request ids and structured access logs, as a pure ASGI middleware (outermost, so every answer,
including 413s cut off while the body streams and errors from other middleware, gets both).

``X-Request-ID`` from the client is kept when it is a plain token of at most 128 characters,
otherwise a new one is made; it is echoed in the response and available to the app as
``request.state.request_id``. One JSON line per request goes to the ``text_recognizer.api.access``
logger (stderr): time, request id, method, route, status, latency, body bytes, image sizes, model
version, worker pid and, with API keys on, a short hash of the key. Never image bytes, never keys.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid

from api.logs import access_logger

_VALID_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")


class AccessLogMiddleware:
    def __init__(self, app, enabled: bool = True):
        self.app = app
        self.logger = access_logger() if enabled else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming_id(scope) or uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        start = time.perf_counter()
        status, received = 500, 0

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        async def send_with_id(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, counting_receive, send_with_id)
        finally:
            if self.logger is not None:
                self.logger.info(json.dumps(_record(scope, state, request_id, status, start, received)))


def _record(scope, state: dict, request_id: str, status: int, start: float, received: int) -> dict:
    route = getattr(scope.get("route"), "path", None)
    model = getattr(getattr(scope.get("app"), "state", None), "model", None)
    serving = getattr(model, "serving", None)
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "request_id": request_id,
        "method": scope["method"],
        "route": route,
        "path": scope["path"] if route is None else None,
        "status": status,
        "latency_ms": round((time.perf_counter() - start) * 1000.0, 3),
        "request_bytes": received,
        "images": [f"{w}x{h}" for w, h in state.get("image_sizes", ())],
        "model_version": serving.provenance.version if serving is not None else None,
        "pid": os.getpid(),
    }
    if state.get("key_id"):
        record["key_id"] = state["key_id"]
    return {k: v for k, v in record.items() if v is not None}


def _incoming_id(scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            text = value.decode("latin-1").strip()
            return text if _VALID_ID.match(text) else None
    return None
