"""The local HTTP API: each request becomes an API Gateway proxy event for the deployed api
function, so routes, status codes and bodies are the ones the deployed API returns."""
from __future__ import annotations

import json
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from agentledger.faults import CRASH_HEADER
from agentledger.service import run_id_for

from .metrics import emitted_metrics, summarize
from .runtime import LocalRuntime

LOCAL_METRICS_PATH = "/_local/metrics"  # local runtime only: on AWS, CloudWatch has the metrics
MAX_BODY_BYTES = 1 << 20
DEFAULT_PORT = 8787


class LocalApiServer:
    def __init__(self, runtime: LocalRuntime, port: int = DEFAULT_PORT, keeper_interval_s: float = 5.0) -> None:
        self.runtime = runtime
        self.keeper_interval_s = keeper_interval_s
        self._stopping = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self.httpd.daemon_threads = True
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LocalApiServer:
        self._threads = [threading.Thread(target=self.httpd.serve_forever, name="local-api", daemon=True)]
        if self.keeper_interval_s > 0:
            self._threads.append(threading.Thread(target=self._keep_reviews, name="review-keeper", daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _keep_reviews(self) -> None:
        """Locally, the schedule that EventBridge runs every five minutes on AWS."""
        while not self._stopping.wait(self.keeper_interval_s):
            try:
                self.runtime.run_review_keeper()
            except Exception as error:  # noqa: BLE001 — keep the schedule alive, as EventBridge would
                print(f"agentledger: review keeper failed: {error}", file=sys.stderr)

    def arm_crash(self, headers: dict[str, str]) -> str | None:
        """Local runtime only: arm a crash for the run this request creates. Returns an error."""
        spec = headers.pop(CRASH_HEADER, None)
        if spec is None:
            return None
        key = headers.get("Idempotency-Key")
        if not key:
            return f"{CRASH_HEADER} needs an Idempotency-Key, which names the run to crash"
        try:
            self.runtime.crashes.arm(run_id_for(key), spec)
        except ValueError as error:
            return str(error)
        return None


def _handler_for(server: LocalApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agentledger-local"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
            return

        def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
            data = body.encode()
            self.send_response(status)
            for name, value in (headers or {"Content-Type": "application/json"}).items():
                if name.lower() not in ("content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: HTTPStatus, message: str) -> None:
            self._send(status, json.dumps({"error": status.phrase, "message": message}))

        def _dispatch(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body is larger than {MAX_BODY_BYTES} bytes")
                return
            raw = self.rfile.read(length).decode() if length else None
            parts = urlsplit(self.path)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "host")}
            headers = {_canonical(k): v for k, v in headers.items()}
            if parts.path == LOCAL_METRICS_PATH and self.command == "GET":
                self._send(HTTPStatus.OK, json.dumps(summarize(emitted_metrics(server.runtime))))
                return
            problem = server.arm_crash(headers) if self.command == "POST" and parts.path == "/runs" else None
            if problem:
                self._error(HTTPStatus.BAD_REQUEST, problem)
                return
            query = dict(parse_qsl(parts.query)) or None
            response = server.runtime.call_api(self.command, parts.path, raw_body=raw, query=query, headers=headers)
            self._send(response.status, response.body, response.headers or None)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    return Handler


def _canonical(name: str) -> str:
    return "-".join(part.capitalize() for part in name.split("-"))
