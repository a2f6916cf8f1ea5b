"""The local stack's HTTP servers' common ground."""
from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class HangupTolerantServer(ThreadingHTTPServer):
    """A client that hung up before its answer was written (a browser leaving a page, a caller
    whose timeout ran out before a slow answer) is not an error of the server's: only other
    failures get socketserver's traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
