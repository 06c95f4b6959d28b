"""Optional access control for the prediction routes: API keys and a per-key request rate limit.

Both are off unless configured (``TEXT_RECOGNIZER_API_KEYS[_FILE]``, ``TEXT_RECOGNIZER_RATE_LIMIT``).
Keys come in ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``, read by FastAPI's security
classes (which also put them in the OpenAPI schema); the limit is counted by the ``limits``
library in a moving window, per key, or per client address when keys are off. Counters live in
the process, so with ``--workers N`` each worker counts on its own.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from limits import parse as parse_rate_limit
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from api.errors import APIError

_bearer = HTTPBearer(auto_error=False, description="an API key as a bearer token")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="an API key")


class RequireKey:
    """Dependency: the request carries one of ``keys`` (401 otherwise); sets ``request.state.key_id``
    to a short hash of it, so logs and rate-limit counters never hold the key itself."""

    def __init__(self, keys: frozenset[str]):
        self._keys = [key.encode() for key in keys]

    def __call__(
        self,
        request: Request,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
        header: Annotated[str | None, Security(_header)],
    ) -> None:
        given = header if header is not None else (bearer.credentials if bearer is not None else None)
        if given is None:
            raise _unauthorized("this route needs an API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'")
        candidate = given.encode()
        if not any(hmac.compare_digest(candidate, key) for key in self._keys):  # compares every key: no timing hint
            raise _unauthorized("the API key is not valid")
        request.state.key_id = hashlib.sha256(candidate).hexdigest()[:12]


class RateLimit:
    """Dependency: at most ``limit`` (e.g. ``"60/minute"``) requests per key or client; 429 with
    ``Retry-After`` (whole seconds until a request is allowed again) beyond it."""

    def __init__(self, limit: str):
        self.limit = parse_rate_limit(limit)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def __call__(self, request: Request) -> None:
        who = getattr(request.state, "key_id", None) or (request.client.host if request.client else "unknown")
        if not self._limiter.hit(self.limit, who):
            reset = self._limiter.get_window_stats(self.limit, who).reset_time
            retry = max(1, math.ceil(reset - time.time()))
            raise APIError(
                429,
                "rate_limited",
                f"more than {self.limit} requests; retry in {retry} s",
                headers={"Retry-After": str(retry)},
            )


def guards(keys: frozenset[str], rate_limit: str | None) -> list:
    """The dependencies to put in front of the prediction routes (none when nothing is configured)."""
    out = []
    if keys:
        out.append(Security(RequireKey(keys)))
    if rate_limit:
        out.append(Depends(RateLimit(rate_limit)))
    return out


def _unauthorized(detail: str) -> APIError:
    return APIError(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})
