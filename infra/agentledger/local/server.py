"""The local HTTP API: each request becomes an API Gateway proxy event for the deployed api
function, so routes, status codes and bodies are the ones the deployed API returns."""
from __future__ import annotations

import json
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from agentledger.api_contract import ErrorBody, run_id_for
from agentledger.faults import CRASH_HEADER, parse_crash
from agentledger.hidden_text import printable
from agentledger.limits import START_RATE, StartRate, retry_after_s

from .console import PREFIX as CONSOLE_PREFIX
from .console import Console, with_security_headers
from .http_servers import HangupTolerantServer
from .metrics import emitted_metrics, summarize
from .principals import SignatureRefused, verify_signature
from .profiles import SERVE_HOST
from .start_rate import TokenBucket
from .throttles import THROTTLE_HEADER, parse_throttle

if TYPE_CHECKING:
    from .runtime import LocalRuntime

LOCAL_METRICS_PATH = "/_local/metrics"  # local runtime only: on AWS, CloudWatch has the metrics
MAX_BODY_BYTES = 1 << 20
# Headers the API acts on, so only as signed: added after signing, they would let whoever holds a
# signed request (a log, a proxy) make it idempotent under a key of theirs, or change how its body
# is read (so Content-Type counts only with a body).
MUST_BE_SIGNED = ("Idempotency-Key", "Content-Type")
DEFAULT_PORT = 8787
SOCKET_TIMEOUT_S = 30  # a client that stops sending mid-request does not hold a thread forever
LOOPBACK_NAMES = (SERVE_HOST, "localhost")


ALLOWED_METHODS = "GET, POST"


class _ApiHttpServer(HangupTolerantServer):
    # Connections waiting to be accepted: the default 5 reset a burst of concurrent requests.
    request_queue_size = 128


class LocalApiServer:
    def __init__(self, runtime: LocalRuntime, port: int = DEFAULT_PORT, keeper_interval_s: float = 5.0,
                 socket_timeout_s: float = SOCKET_TIMEOUT_S, start_rate: StartRate = START_RATE) -> None:
        """`start_rate`: how fast POST /runs may start runs, as API Gateway's method throttling
        allows on AWS (the same START_RATE unless a test asks for another)."""
        self.runtime = runtime
        self.starts = TokenBucket(start_rate)
        self.socket_timeout_s = socket_timeout_s
        self.keeper_interval_s = keeper_interval_s
        self.console = Console(runtime)
        self._stopping = threading.Event()
        self.httpd = _ApiHttpServer((SERVE_HOST, port), _handler_for(self))
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://{SERVE_HOST}:{self.httpd.server_port}"

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
                print(printable(f"agentledger: review keeper failed: {error}"), file=sys.stderr)

    def arm_faults(self, headers: dict[str, str], caller: str) -> str | None:
        """Local runtime only: arm the crash and the throttle the request's headers name, for the
        run this request creates. Returns an error."""
        crash, throttle = headers.pop(CRASH_HEADER, None), headers.pop(THROTTLE_HEADER, None)
        if crash is None and throttle is None:
            return None
        key = headers.get("Idempotency-Key")
        if not key:
            return f"{CRASH_HEADER} and {THROTTLE_HEADER} need an Idempotency-Key, which names the run"
        try:  # both checked before either is armed: a refused request arms nothing
            for spec, parse in ((crash, parse_crash), (throttle, parse_throttle)):
                if spec is not None:
                    parse(spec)
        except ValueError as error:
            return str(error)
        run_id = run_id_for(key, caller)
        if crash is not None:
            self.runtime.crashes.arm(run_id, crash)
        if throttle is not None:
            self.runtime.throttles.arm(throttle, run_id)
        return None


def _handler_for(server: LocalApiServer) -> type[BaseHTTPRequestHandler]:  # noqa: C901 — its class's methods, summed
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agentledger-local"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
            return

        timeout = server.socket_timeout_s

        def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
            self._send_bytes(status, body.encode(), {
                name: value for name, value in (headers or {"Content-Type": "application/json"}).items()
                if name.lower() not in ("content-length", "connection")})

        def _error(self, status: HTTPStatus, message: str) -> None:
            self._send(status, ErrorBody.of(status, message).model_dump_json())

        def _refusal(self) -> tuple[HTTPStatus, str] | None:  # noqa: PLR0911 — one return per refusal
            """What the local API refuses before reading a body: another site's page or a
            rebinding DNS name talking to this loopback server, and bodies it cannot frame."""
            port = server.httpd.server_port
            loopback = {f"{name}:{port}" for name in LOOPBACK_NAMES}
            if self.headers.get("Host", "") not in loopback:
                return HTTPStatus.FORBIDDEN, f"Host must be this server's loopback address ({sorted(loopback)[0]})"
            origin = self.headers.get("Origin")
            if origin is not None and origin not in {f"http://{host}" for host in loopback}:
                return HTTPStatus.FORBIDDEN, f"cross-origin requests are refused (Origin {origin[:100]})"
            length = self.headers.get("Content-Length") or "0"
            if not length.isdigit() or len(self.headers.get_all("Content-Length") or []) > 1:
                return HTTPStatus.BAD_REQUEST, "Content-Length must be one non-negative whole number"
            if int(length) > MAX_BODY_BYTES:
                return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body is larger than {MAX_BODY_BYTES} bytes"
            if self.headers.get("Transfer-Encoding"):
                return HTTPStatus.BAD_REQUEST, "Transfer-Encoding is not accepted; send Content-Length"
            # A body in another type is refused as the api function refuses it; no body needs no type.
            if int(length) and not (self.headers.get("Content-Type") or "").startswith("application/json"):
                return HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json"
            return None

        def _dispatch(self) -> None:  # noqa: PLR0911 — it returns once it has answered
            refusal = self._refusal()
            if refusal is not None:
                # The body is never read: close, so its bytes cannot be taken for the next request.
                self.close_connection = True
                self._error(*refusal)
                return
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            if parts.path == CONSOLE_PREFIX.rstrip("/") or parts.path.startswith(CONSOLE_PREFIX):
                self._console(parts.path, parts.query, data)
                return
            try:
                # As API Gateway's IAM authorization: the signature names the caller, or 403.
                verified = verify_signature(self.command, f"http://{self.headers.get('Host', '')}{self.path}",
                                            dict(self.headers.items()), data)
            except SignatureRefused as refused:
                self._error(HTTPStatus.FORBIDDEN, str(refused))
                return
            sent = {name.lower() for name in self.headers} - verified.signed_headers
            unsigned = [name for name in MUST_BE_SIGNED if name.lower() in sent and (data or name != "Content-Type")]
            if unsigned:
                self._error(HTTPStatus.BAD_REQUEST, f"{' and '.join(unsigned)} must be signed (named in "
                                                    "SignedHeaders): a header added after signing is not taken")
                return
            readable, raw = self._text(data)
            if not readable:
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "host")}
            headers = {_canonical(k): v for k, v in headers.items()}
            if parts.path == LOCAL_METRICS_PATH and self.command == "GET":
                self._send(HTTPStatus.OK, json.dumps(summarize(emitted_metrics(server.runtime))))
                return
            starting = self.command == "POST" and parts.path == "/runs"
            if starting and (wait_s := server.starts.take()):
                # As API Gateway's throttle answers, before the api function: nothing was started.
                # Locally a request the edge refused above (unsigned, unreadable) takes no start.
                self._send(HTTPStatus.TOO_MANY_REQUESTS,
                           ErrorBody.of(HTTPStatus.TOO_MANY_REQUESTS, server.starts.rate.refusal()).model_dump_json(),
                           {"Content-Type": "application/json", "Retry-After": str(retry_after_s(wait_s))})
                return
            problem = server.arm_faults(headers, verified.arn) if starting else None
            if problem:
                self._error(HTTPStatus.BAD_REQUEST, problem)
                return
            # Blank values are kept, as API Gateway keeps them: `?limit=` is a value to validate, not an absence.
            query = dict(parse_qsl(parts.query, keep_blank_values=True)) or None
            response = server.runtime.call_api(self.command, parts.path, raw_body=raw, query=query, headers=headers,
                                               caller=verified.arn)
            self._send(response.status, response.body, response.headers or None)

        def _text(self, data: bytes) -> tuple[bool, str | None]:
            """The body as text, or (False, None) with a 400 sent when it is not UTF-8. The API reads it
            once the signature has named the caller, as API Gateway authorizes before anything else."""
            try:
                return True, (data.decode("utf-8") if data else None)
            except UnicodeDecodeError:
                self._error(HTTPStatus.BAD_REQUEST, "the body is not UTF-8")
                return False, None

        def _console(self, path: str, query: str, data: bytes) -> None:
            """The console's pages and calls: signed by the session cookie, not by SigV4."""
            if path == CONSOLE_PREFIX.rstrip("/"):
                self._send(HTTPStatus.MOVED_PERMANENTLY, "", {"Location": CONSOLE_PREFIX})
                return
            if self.command not in ("GET", "POST"):
                self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"the console takes {ALLOWED_METHODS}")
                return
            readable, body = self._text(data)
            if not readable:
                return
            answer = server.console.handle(self.command, path, dict(parse_qsl(query, keep_blank_values=True)),
                                           {k.lower(): v for k, v in self.headers.items()}, body)
            self._send_bytes(answer.status, answer.body, with_security_headers(answer.headers))

        def _send_bytes(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            if self.close_connection:
                self.send_header("Connection", "close")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

        def _not_allowed(self) -> None:
            self.close_connection = True
            if self.command == "HEAD":  # a HEAD answer carries no body
                self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
                self.send_header("Allow", ALLOWED_METHODS)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = ErrorBody.of(HTTPStatus.METHOD_NOT_ALLOWED,
                                f"{self.command} is not supported; the API takes {ALLOWED_METHODS}")
            self._send(HTTPStatus.METHOD_NOT_ALLOWED, body.model_dump_json(),
                       {"Content-Type": "application/json", "Allow": ALLOWED_METHODS})

        do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    return Handler


def _canonical(name: str) -> str:
    return "-".join(part.capitalize() for part in name.split("-"))
