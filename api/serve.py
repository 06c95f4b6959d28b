"""``text-recognizer-serve`` (or ``python -m api.serve``): run the API server.

A thin command-line layer over uvicorn, so that an installed package can serve without knowing
uvicorn's import-string syntax, with the settings this service wants in production: uvicorn's
own access log off (the app writes structured JSON lines instead), no ``Server`` header, and a
bounded graceful shutdown (in-flight requests are finished, for up to ``--graceful-timeout`` seconds).
Model and limits come from the ``TEXT_RECOGNIZER_*`` environment variables (``api/settings.py``);
each of ``--workers`` processes loads the model once.

With several workers uvicorn (0.54) binds the shared listening socket with ``proto`` 0, so asyncio
never sets ``TCP_NODELAY`` on accepted connections and every keep-alive response waits ~40 ms
for the client's delayed ACK (uvicorn issue #3149; measured here: 50 ms of HTTP overhead per
request with 2 workers against 11 ms with 1). :func:`listening_socket` binds it as TCP.
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="text-recognizer-serve",
        description="Serve the handwritten line recognizer.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port")
    parser.add_argument("--workers", type=int, default=1, help="server processes, each with its own copy of the model")
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=10.0,
        help="seconds to finish in-flight requests after SIGTERM before they are cancelled",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    options = dict(
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=args.graceful_timeout,
    )
    import uvicorn  # the serve extra; imported here so that --help works without it
    from uvicorn.supervisors import Multiprocess

    if args.workers == 1:
        uvicorn.run("api.app:app", **options)  # exits with status 3 if the app cannot start
        return 0
    config = uvicorn.Config("api.app:app", **options)
    Multiprocess(config, sockets=[listening_socket(config)]).run()
    return 0


def listening_socket(config: uvicorn.Config) -> socket.socket:
    """uvicorn's bound socket, re-opened so that it reports ``IPPROTO_TCP`` (read from the descriptor)
    and asyncio turns Nagle's algorithm off on every connection it accepts."""
    bound = config.bind_socket()
    return socket.socket(fileno=bound.detach())


if __name__ == "__main__":
    raise SystemExit(main())
