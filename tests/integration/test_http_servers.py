"""The local stack's HTTP servers (the API, the console, the local GitHub) print no traceback for a
client that hung up before its answer was written, and still do for a failure of their own."""
from __future__ import annotations

import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from agentledger.local.http_servers import HangupTolerantServer

pytestmark = pytest.mark.integration

ANSWER_DELAY_S = 0.5  # the client is gone by then


class SlowAnswer(BaseHTTPRequestHandler):
    started = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 — http.server's name
        self.started.set()
        time.sleep(ANSWER_DELAY_S)
        if self.path == "/defect":
            raise RuntimeError("the server's own failure")
        for _ in range(64):  # past the socket's buffer, so a write meets the reset
            self.wfile.write(b"x" * 65536)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 — http.server's name
        pass


def _hang_up_on(port: int, path: str) -> None:
    """A request, then a close with a reset (SO_LINGER 0) before any answer: as a caller whose
    timeout ran out."""
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


@pytest.mark.parametrize(("path", "traceback_printed"), [("/answer", False), ("/defect", True)])
def test_only_a_failure_of_the_server_s_own_prints_a_traceback(capsys: pytest.CaptureFixture[str], path: str,
                                                                traceback_printed: bool) -> None:
    server = HangupTolerantServer(("127.0.0.1", 0), SlowAnswer)
    server.daemon_threads, server.block_on_close = False, True  # closing waits for the answer's thread
    SlowAnswer.started.clear()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _hang_up_on(server.server_address[1], path)
        assert SlowAnswer.started.wait(timeout=30), "the request never reached the server"
    finally:
        server.shutdown()
        server.server_close()
    assert ("Traceback" in capsys.readouterr().err) is traceback_printed
