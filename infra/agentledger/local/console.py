"""The local console (issue 25): pages under /console/ on serve's own loopback port, and the JSON
they read, each call made to the API as the principal the browser signed in as.

A browser cannot hold AWS keys, so `serve` prints, for each local principal, a one-time sign-in
link, as Jupyter does. Following it swaps the token for a session: a random id in an HttpOnly,
SameSite=Strict cookie, bound to that principal, expiring after SESSION_SECONDS. Every call the
page makes goes to the api function with that principal as the caller, exactly as a SigV4-signed
request names it, so the API's own checks (validation, separation of duties, plan digests) apply
unchanged, and what the page does is recorded as that principal's. A POST must also carry the
session's CSRF token in CSRF_HEADER; the server's Host and Origin checks apply to the console as to
the API.

Routes (everything else under /console/ is a 404):
  GET  /console/                       the page (static/index.html)
  GET  /console/static/<file>          its script and style sheet
  GET  /console/signin?token=T         swaps a sign-in token for a session, then 303 to /console/
  GET  /console/session                {"principal", "duty", "csrf", "expires_at"}, or 401
  POST /console/signout                ends the session
  GET  /console/statemachine           the state machine's definition: the same ASL file AWS runs
  GET  /console/api/<API path>         the API's answer to that GET, as the session's principal
  POST /console/api/<API path>         the same for a POST (review, resume)
  GET  /console/history/<run id>       the run's executions with their event histories
  GET  /console/artifact/<run id>?key= an artifact's bytes (at most ARTIFACT_INLINE_BYTES)
"""
from __future__ import annotations

import hashlib
import json
import mimetypes
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import boto3

from agentledger.adapters.dynamodb_ledger import LedgerStore
from agentledger.adapters.stepfunctions import execution_arn
from agentledger.api_contract import RUN_ID_PATTERN, ErrorBody
from agentledger.deploy import CONSOLE_STATIC_DIR, STATE_MACHINE_FILE
from agentledger.errors import RunNotFoundError

from .runtime import REGION, LocalRuntime

if TYPE_CHECKING:
    from collections.abc import Callable

    from .principals import LocalPrincipal

PREFIX = "/console/"
SESSION_COOKIE = "agentledger_console"
SESSION_SECONDS = 8 * 3600
CSRF_HEADER = "X-CSRF-Token"
ARTIFACT_INLINE_BYTES = 2 << 20  # larger artifacts are offered as downloads (their presigned link)
HISTORY_EVENTS_LIMIT = 2000  # per execution: a week's review wait heartbeats stay well under it
ENDED_HISTORIES_KEPT = 64  # ended executions' histories kept in memory, the least recently read dropped first
SECURITY_HEADERS = {
    # Everything the page loads is its own: no inline script, no other origin, no framing.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


SIGN_IN_REFUSED = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in refused · agentledger console</title></head>
<body><h1>This sign-in link is not valid</h1>
<p>Each link signs one browser in once. Restart <code>agentledger serve</code> for new links, or use one of the
others it printed.</p></body></html>
"""


@dataclass(frozen=True)
class ConsoleResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Session:
    principal: LocalPrincipal
    csrf: str
    expires: float


class Console:
    def __init__(self, runtime: LocalRuntime, session_seconds: int = SESSION_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.session_seconds = session_seconds
        self.clock = clock  # when sessions expire is read from it
        self._lock = threading.Lock()
        self._sign_ins: dict[str, LocalPrincipal] = {}  # sha256 of a token -> whom it signs in
        self._sessions: dict[str, _Session] = {}  # sha256 of a session id -> the session
        self._ended: OrderedDict[str, dict[str, Any]] = OrderedDict()  # execution name -> its history
        self._ledger_store: LedgerStore | None = None

    def sign_in_links(self, base_url: str) -> dict[str, str]:
        """A fresh one-time sign-in link for each local principal, by duty."""
        links = {}
        with self._lock:
            for principal in self.runtime.principals:
                token = secrets.token_urlsafe(32)
                self._sign_ins[_digest(token)] = principal
                links[principal.duty] = f"{base_url}{PREFIX}signin?token={token}"
        return links

    # -- routing ---------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],  # noqa: PLR0911 — a router
               body: str | None) -> ConsoleResponse:
        route = path.removeprefix(PREFIX)
        if method == "GET" and route in ("", "index.html"):
            return self._static("index.html")
        if method == "GET" and route.startswith("static/"):
            return self._static(route.removeprefix("static/"))
        if method == "GET" and route == "signin":
            return self._sign_in(query.get("token", ""))
        session = self._session(headers)
        if session is None:
            return _error(HTTPStatus.UNAUTHORIZED, "not signed in: open a sign-in link `agentledger serve` printed")
        if method == "POST":
            if not secrets.compare_digest(headers.get(CSRF_HEADER.lower(), ""), session.csrf):
                return _error(HTTPStatus.FORBIDDEN, f"a console POST must carry the session's {CSRF_HEADER}")
            if route == "signout":
                return self._sign_out(headers)
        if method == "GET" and route == "session":
            return _json(HTTPStatus.OK, {"principal": session.principal.arn, "duty": session.principal.duty,
                                         "csrf": session.csrf, "expires_at": _iso(session.expires)})
        if method == "GET" and route == "statemachine":
            return ConsoleResponse(HTTPStatus.OK, STATE_MACHINE_FILE.read_bytes(), {"Content-Type": "application/json"})
        if route.startswith("api/"):
            return self._api(method, "/" + route.removeprefix("api/"), query, body, session)
        if method == "GET" and route.startswith("history/"):
            return self._history(route.removeprefix("history/"))
        if method == "GET" and route.startswith("artifact/"):
            return self._artifact(route.removeprefix("artifact/"), query.get("key", ""), session)
        return _error(HTTPStatus.NOT_FOUND, f"no console page {path[:200]}")

    # -- sign-in and sessions --------------------------------------------------------------------
    def _sign_in(self, token: str) -> ConsoleResponse:
        with self._lock:
            principal = self._sign_ins.pop(_digest(token), None)
            if principal is None:
                # A person followed it: a page, not the API's JSON.
                return ConsoleResponse(HTTPStatus.FORBIDDEN, SIGN_IN_REFUSED.encode(),
                                       {"Content-Type": "text/html; charset=utf-8"})
            session_id = secrets.token_urlsafe(32)
            self._sessions[_digest(session_id)] = _Session(principal, secrets.token_urlsafe(32),
                                                           self.clock() + self.session_seconds)
        cookie = (f"{SESSION_COOKIE}={session_id}; Path={PREFIX}; HttpOnly; SameSite=Strict; "
                  f"Max-Age={self.session_seconds}")
        return ConsoleResponse(HTTPStatus.SEE_OTHER, b"", {"Location": PREFIX, "Set-Cookie": cookie})

    def _session(self, headers: dict[str, str]) -> _Session | None:
        session_id = _cookie(headers.get("cookie", ""), SESSION_COOKIE)
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(_digest(session_id))
            if session is not None and session.expires <= self.clock():
                del self._sessions[_digest(session_id)]
                return None
            return session

    def _sign_out(self, headers: dict[str, str]) -> ConsoleResponse:
        with self._lock:
            self._sessions.pop(_digest(_cookie(headers.get("cookie", ""), SESSION_COOKIE)), None)
        expired = f"{SESSION_COOKIE}=; Path={PREFIX}; HttpOnly; SameSite=Strict; Max-Age=0"
        return ConsoleResponse(HTTPStatus.NO_CONTENT, b"", {"Set-Cookie": expired})

    # -- what the pages read -------------------------------------------------------------------
    def _api(self, method: str, path: str, query: dict[str, str], body: str | None,
             session: _Session) -> ConsoleResponse:
        headers = {"Content-Type": "application/json"} if body else {}
        response = self.runtime.call_api(method, path, raw_body=body, query=query or None, headers=headers,
                                         caller=session.principal.arn)
        return ConsoleResponse(response.status, response.body.encode(), {"Content-Type": "application/json"})

    def _run_view(self, run_id: str, session: _Session) -> tuple[dict[str, Any] | None, ConsoleResponse | None]:
        """The run as the API shows it to this principal: what the console may show of it."""
        if not re.fullmatch(RUN_ID_PATTERN, run_id):
            return None, _error(HTTPStatus.BAD_REQUEST, "not a run id")
        response = self.runtime.call_api("GET", f"/runs/{run_id}", caller=session.principal.arn)
        if response.status != HTTPStatus.OK:
            return None, ConsoleResponse(response.status, response.body.encode(), {"Content-Type": "application/json"})
        return json.loads(response.body), None

    def _history(self, run_id: str) -> ConsoleResponse:
        """The run's executions and their event histories. Any signed-in principal may read any
        run through the API, so the run's own record (one read) is enough to name its executions;
        the page asks for this beside the run's view, not after it."""
        if not re.fullmatch(RUN_ID_PATTERN, run_id):
            return _error(HTTPStatus.BAD_REQUEST, "not a run id")
        try:
            run = self._ledger().get_run(run_id)
        except RunNotFoundError as error:
            return _error(HTTPStatus.NOT_FOUND, str(error))
        executions = [self._execution(name) for name in run.executions]
        return _json(HTTPStatus.OK, {"run_id": run_id, "executions": executions})

    def _ledger(self) -> LedgerStore:
        """The ledger's table, once the runtime has deployed it (`serve` makes the server before)."""
        if self._ledger_store is None:
            self._ledger_store = LedgerStore(self.runtime.output("LedgerTableName"),
                                             boto3.resource("dynamodb", region_name=REGION))
        return self._ledger_store

    def _execution(self, name: str) -> dict[str, Any]:
        """An execution's status and events. An ended execution's history never changes again, so
        it is kept (the page polls a run it shows, and a finished run's histories are its bulk)."""
        with self._lock:
            ended = self._ended.get(name)
            if ended is not None:
                self._ended.move_to_end(name)
                return ended
        sfn = self.runtime.client("stepfunctions")
        arn = execution_arn(self.runtime.state_machine_arn, name)
        try:
            described = sfn.describe_execution(executionArn=arn)
        except sfn.exceptions.ExecutionDoesNotExist:
            return {"name": name, "status": "UNKNOWN", "events": [], "truncated": False}
        events, truncated = [], False
        for page in sfn.get_paginator("get_execution_history").paginate(executionArn=arn):
            events.extend(page["events"])
            if len(events) >= HISTORY_EVENTS_LIMIT:
                events, truncated = events[:HISTORY_EVENTS_LIMIT], True
                break
        execution = {"name": name, "status": described["status"], "start": described.get("startDate"),
                     "stop": described.get("stopDate"), "events": events, "truncated": truncated}
        if described["status"] != "RUNNING":
            with self._lock:
                self._ended[name] = execution
                while len(self._ended) > ENDED_HISTORIES_KEPT:
                    self._ended.popitem(last=False)
        return execution

    def _artifact(self, run_id: str, key: str, session: _Session) -> ConsoleResponse:
        view, refused = self._run_view(run_id, session)
        if view is None:
            return refused or _error(HTTPStatus.NOT_FOUND, "no such run")
        found = [a for a in view.get("artifacts", []) if a["key"] == key]
        if not found:
            return _error(HTTPStatus.NOT_FOUND, "this run has no artifact with that key")
        if found[0]["size"] > ARTIFACT_INLINE_BYTES:
            return _error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                          f"larger than {ARTIFACT_INLINE_BYTES} bytes: download it through its link")
        bucket = self.runtime.output("ArtifactBucketName")
        data = self.runtime.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read(ARTIFACT_INLINE_BYTES + 1)
        # The bytes as stored: the page hashes them and compares with the ledger's sha256.
        return ConsoleResponse(HTTPStatus.OK, data, {"Content-Type": "application/octet-stream",
                                                     "Content-Disposition": f"inline; filename*=UTF-8''"
                                                                            f"{quote(found[0]['name'])}"})

    @staticmethod
    def _static(name: str) -> ConsoleResponse:
        path = (CONSOLE_STATIC_DIR / name).resolve()
        if path.parent != CONSOLE_STATIC_DIR.resolve() or not path.is_file():
            return _error(HTTPStatus.NOT_FOUND, "no such console file")
        media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return ConsoleResponse(HTTPStatus.OK, path.read_bytes(), {"Content-Type": f"{media_type}; charset=utf-8"})


def with_security_headers(headers: dict[str, str]) -> dict[str, str]:
    return {**SECURITY_HEADERS, **headers}


def _json(status: int, body: Any) -> ConsoleResponse:
    return ConsoleResponse(status, json.dumps(body, default=str).encode(), {"Content-Type": "application/json"})


def _error(status: HTTPStatus, message: str) -> ConsoleResponse:
    return ConsoleResponse(status, ErrorBody.of(status, message).model_dump_json().encode(),
                           {"Content-Type": "application/json"})


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
