"""``python -m api.serve``: its options, and the listening socket it hands to several workers."""

from __future__ import annotations

import socket
import subprocess
import sys

import uvicorn

from api.serve import listening_socket
from tests.api.conftest import ROOT


def test_help_names_the_options():
    result = subprocess.run(
        [sys.executable, "-m", "api.serve", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0
    for option in ("--host", "--port", "--workers", "--graceful-timeout"):
        assert option in result.stdout


def test_bad_worker_count_is_refused():
    result = subprocess.run(
        [sys.executable, "-m", "api.serve", "--workers", "0"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and "--workers must be at least 1" in result.stderr


def test_shared_socket_is_tcp_so_connections_get_nodelay():
    """asyncio sets TCP_NODELAY only on accepted sockets whose ``proto`` is IPPROTO_TCP."""
    sock = listening_socket(uvicorn.Config("api.app:app", host="127.0.0.1", port=0))
    try:
        assert sock.proto == socket.IPPROTO_TCP and sock.type == socket.SOCK_STREAM
        sock.listen()
        with socket.create_connection(sock.getsockname()[:2]):
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
