"""A GitHub-compatible issue tracker on loopback: the subset of the REST API the ticket
receiver uses (create, list by label, get), with faults a real tracker shows — accept a write
and lose the response, answer slowly, or fail — and a count of what it holds and was sent per
key. Faults and counts can be scoped to a key prefix (a run's id), so runs sharing one tracker
neither take each other's faults nor show up in each other's counts."""
from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentledger.receivers import MARKER_PREFIX

ISSUES_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues(?:/(?P<number>\d+))?$")
MARKER = re.compile(re.escape(MARKER_PREFIX) + r"\s*(?P<key>\S+)\s*-->")
FAULTS = ("drop_response", "slow", "fail")


@dataclass
class Fault:
    kind: str  # drop_response | slow | fail
    delay_s: float = 0.0
    key_prefix: str = ""  # strikes only a write whose key starts with this


def _key_of(body: str) -> str:
    match = MARKER.search(body)
    return match["key"] if match else ""


class LocalGitHub:
    def __init__(self, token: str, port: int = 0) -> None:
        self.token = token
        self._issues: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._written_keys: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="local-github", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LocalGitHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- faults ----------------------------------------------------------------------------
    def inject(self, kind: str, count: int = 1, delay_s: float = 0.0, key_prefix: str = "") -> None:
        """The next `count` writes whose key starts with `key_prefix` (any write, without one)
        suffer `kind`."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
        with self._lock:
            self._faults.extend(Fault(kind, delay_s, key_prefix) for _ in range(count))

    def _receive_write(self, key: str) -> Fault | None:
        """Count the write and take the first fault armed for its key."""
        with self._lock:
            self._written_keys.append(key)
            fault = next((f for f in self._faults if key.startswith(f.key_prefix)), None)
            if fault is not None:
                self._faults.remove(fault)
            return fault

    def writes_received(self, key_prefix: str = "") -> int:
        """Writes sent for keys starting with `key_prefix`, whether or not they landed."""
        with self._lock:
            return sum(1 for key in self._written_keys if key.startswith(key_prefix))

    # -- what the tracker holds ------------------------------------------------------------
    def issues(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(issue) for issue in self._issues]

    def issues_by_key(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for issue in self.issues():
            key = _key_of(issue.get("body") or "")
            if key:
                counts[key] = counts.get(key, 0) + 1
        return counts

    def _create(self, owner: str, repo: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            number = len(self._issues) + 1
            issue = {
                "id": 10_000 + number, "number": number, "state": "open",
                "title": body.get("title", ""), "body": body.get("body", ""),
                "labels": [{"name": name} for name in body.get("labels", [])],
                "html_url": f"{self.url}/{owner}/{repo}/issues/{number}",
                "repository": f"{owner}/{repo}",
            }
            self._issues.append(issue)
            return dict(issue)

    def _list(self, owner: str, repo: str, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        label = (query.get("labels") or [None])[0]
        per_page = int((query.get("per_page") or ["30"])[0])
        page = int((query.get("page") or ["1"])[0])
        matching = [i for i in self.issues() if i["repository"] == f"{owner}/{repo}"
                    and (label is None or label in {lbl["name"] for lbl in i["labels"]})]
        return matching[(page - 1) * per_page: page * per_page]


def _handler_for(tracker: LocalGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
            return

        def _reply(self, status: int, document: Any) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if self.headers.get("Authorization") == f"Bearer {tracker.token}":
                return True
            self._reply(HTTPStatus.UNAUTHORIZED, {"message": "Bad credentials"})
            return False

        def do_GET(self) -> None:  # noqa: N802 — the base class's name
            if not self._authorized():
                return
            parts = urlsplit(self.path)
            match = ISSUES_PATH.match(parts.path)
            if not match:
                self._reply(HTTPStatus.NOT_FOUND, {"message": "Not Found"})
                return
            if match["number"]:
                found = [i for i in tracker.issues() if i["number"] == int(match["number"])
                         and i["repository"] == f"{match['owner']}/{match['repo']}"]
                self._reply(HTTPStatus.OK if found else HTTPStatus.NOT_FOUND,
                            found[0] if found else {"message": "Not Found"})
                return
            self._reply(HTTPStatus.OK, tracker._list(match["owner"], match["repo"], parse_qs(parts.query)))

        def do_POST(self) -> None:  # noqa: N802
            if not self._authorized():
                return
            match = ISSUES_PATH.match(urlsplit(self.path).path)
            if not match or match["number"]:
                self._reply(HTTPStatus.NOT_FOUND, {"message": "Not Found"})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            fault = tracker._receive_write(_key_of(str(body.get("body") or "")))
            if fault and fault.kind == "fail":
                self._reply(HTTPStatus.SERVICE_UNAVAILABLE, {"message": "Service Unavailable"})
                return
            if fault and fault.kind == "slow":
                time.sleep(fault.delay_s)  # the write lands, late: after the caller gave up waiting
            issue = tracker._create(match["owner"], match["repo"], body)
            if fault and fault.kind == "drop_response":
                self.close_connection = True
                self.connection.shutdown(2)  # accepted, and the answer never arrives
                return
            self._reply(HTTPStatus.CREATED, issue)

    return Handler
