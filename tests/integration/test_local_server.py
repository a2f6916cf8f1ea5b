"""The local HTTP server itself, in process: a client that stops sending is dropped."""
from __future__ import annotations

import socket
import time

import pytest

from infra.local.server import LocalApiServer

pytestmark = pytest.mark.integration


def test_a_client_that_stops_mid_request_is_disconnected_after_the_socket_timeout(runtime) -> None:
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0, socket_timeout_s=1).start()
    try:
        host, port = server.httpd.server_address[:2]
        with socket.create_connection((host, port), timeout=10) as connection:
            connection.sendall(b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
            started = time.monotonic()
            assert connection.recv(1024) == b""  # closed by the server, not answered
            assert time.monotonic() - started < 5
    finally:
        server.stop()
