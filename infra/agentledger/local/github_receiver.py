"""A GitHub-compatible receiver on loopback: the subset of the REST API the ticket and pull-request
receivers use (issues: create, list by label, get; git data: refs, commits, trees; pulls: create,
list by head, get), with faults a real service shows — accept a write and lose the response,
answer slowly, or fail — and a count of what it holds and was sent per key. Faults strike the
writes that carry a key (issue and pull-request creation) and can be scoped to a key prefix (a
run's id, or `<run>/ticket/`), so runs sharing one receiver neither take each other's faults nor
show up in each other's counts. A rate-limit fault answers as GitHub does when a primary or
secondary limit binds: 403 or 429, GitHub's message, and the headers that name the wait. Every
repository starts with one empty commit on `main`."""
from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from agentledger.adapters.receivers import MARKER_PREFIX
from agentledger.local.http_servers import HangupTolerantServer

if TYPE_CHECKING:
    from collections.abc import Callable

REPOSITORY_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?P<rest>.+)$")
# Where html_url points: GitHub's page for an issue or pull request. Here a JSON view of it (with
# a pull request's files), so the links agentledger records open locally.
PAGE_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?P<kind>issues|pull)/(?P<number>\d+)$")
MARKER = re.compile(re.escape(MARKER_PREFIX) + r"\s*(?P<key>\S+)\s*-->")
HOST = "127.0.0.1"  # the only address the local GitHub listens on
FAULTS = ("drop_response", "slow", "fail", "rate_limit")
# How a rate limit names its wait, as GitHub's answers do: a secondary limit's `retry-after`, a
# primary limit's `x-ratelimit-remaining: 0` with `x-ratelimit-reset`, or a secondary limit's message alone.
RATE_LIMIT_STYLES = ("retry_after", "reset", "message")
SECONDARY_LIMIT_MESSAGE = ("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
                           "If you reach out to GitHub Support for help, please include the request ID.")
PRIMARY_LIMIT_MESSAGE = "API rate limit exceeded for user ID 1. (But here's the good news: Authenticated requests " \
                        "get a higher rate limit.)"
RATE_LIMIT_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
HOURLY_LIMIT = 5000
DEFAULT_BRANCH = "main"
MAX_BODY_BYTES = 10 * 1024 * 1024


@dataclass
class Fault:
    kind: str  # drop_response | slow | fail | rate_limit
    delay_s: float = 0.0  # slow: how late the answer comes; rate_limit: the wait it names
    key_prefix: str = ""  # strikes only a write whose key starts with this
    status: int = HTTPStatus.TOO_MANY_REQUESTS  # rate_limit: 403 or 429, as GitHub answers either
    style: str = "retry_after"  # rate_limit: one of RATE_LIMIT_STYLES

    def rate_limit_answer(self, now: float) -> tuple[dict[str, Any], dict[str, str]]:
        """The body and headers GitHub answers a rate-limited request with."""
        headers = {"x-ratelimit-limit": str(HOURLY_LIMIT), "x-ratelimit-remaining": str(HOURLY_LIMIT - 1),
                   "x-ratelimit-reset": str(int(now) + 3600), "x-ratelimit-resource": "core"}
        if self.style == "reset":
            headers |= {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(math.ceil(now + self.delay_s))}
            return {"message": PRIMARY_LIMIT_MESSAGE, "documentation_url": RATE_LIMIT_DOCS}, headers
        if self.style == "retry_after":
            headers["retry-after"] = str(math.ceil(self.delay_s))
        return {"message": SECONDARY_LIMIT_MESSAGE, "documentation_url": RATE_LIMIT_DOCS}, headers


def _key_of(body: str) -> str:
    match = MARKER.search(body)
    return match["key"] if match else ""


def _object_sha(kind: str, document: Any) -> str:
    return hashlib.sha1(f"{kind}:{json.dumps(document, sort_keys=True)}".encode()).hexdigest()  # noqa: S324 — an id, as git's


@dataclass
class Repository:
    """Git data as GitHub's API shows it: a tree is a flat map of path to content."""

    full_name: str
    refs: dict[str, str] = field(default_factory=dict)  # "heads/main" -> commit sha
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    trees: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        empty = self.add_tree({})
        self.refs[f"heads/{DEFAULT_BRANCH}"] = self.add_commit("Initial commit", empty, [])

    def add_tree(self, files: dict[str, str]) -> str:
        sha = _object_sha("tree", files)
        self.trees[sha] = dict(files)
        return sha

    def add_commit(self, message: str, tree: str, parents: list[str]) -> str:
        sha = _object_sha("commit", {"message": message, "tree": tree, "parents": parents, "n": len(self.commits)})
        self.commits[sha] = {"sha": sha, "message": message, "tree": {"sha": tree},
                             "parents": [{"sha": parent} for parent in parents]}
        return sha


class LocalGitHub:
    def __init__(self, token: str, port: int = 0) -> None:
        self.token = token
        self._issues: list[dict[str, Any]] = []
        self._pulls: list[dict[str, Any]] = []
        self._repositories: dict[str, Repository] = {}
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._written_keys: list[str] = []
        self.httpd = HangupTolerantServer((HOST, port), _handler_for(self))
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="local-github", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_port}"

    def start(self) -> LocalGitHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- faults ----------------------------------------------------------------------------
    def inject(self, kind: str, count: int = 1, delay_s: float = 0.0, key_prefix: str = "",
               status: int = HTTPStatus.TOO_MANY_REQUESTS, style: str = "retry_after") -> None:
        """The next `count` writes whose key starts with `key_prefix` (any write, without one)
        suffer `kind`. A `rate_limit` answers `status` and names a wait of `delay_s` in `style`."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
        if kind == "rate_limit" and (status not in (HTTPStatus.FORBIDDEN, HTTPStatus.TOO_MANY_REQUESTS)
                                     or style not in RATE_LIMIT_STYLES):
            raise ValueError(f"a rate limit answers 403 or 429 in one of {', '.join(RATE_LIMIT_STYLES)}")
        with self._lock:
            self._faults.extend(Fault(kind, delay_s, key_prefix, status, style) for _ in range(count))

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

    # -- what the receiver holds -----------------------------------------------------------
    def issues(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(issue) for issue in self._issues]

    def issues_by_key(self) -> dict[str, int]:
        return _count_by_key(self.issues())

    def pulls(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(pull) for pull in self._pulls]

    def pulls_by_key(self) -> dict[str, int]:
        return _count_by_key(self.pulls())

    def files_at(self, full_name: str, branch: str) -> dict[str, str]:
        """The files on a branch's head commit."""
        with self._lock:
            repository = self._repository(full_name)
            commit = repository.commits[repository.refs[f"heads/{branch}"]]
            return dict(repository.trees[commit["tree"]["sha"]])

    def _repository(self, full_name: str) -> Repository:
        """Called with the lock held."""
        if full_name not in self._repositories:
            self._repositories[full_name] = Repository(full_name)
        return self._repositories[full_name]

    # -- issues ----------------------------------------------------------------------------
    def _create_issue(self, full_name: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            number = len(self._issues) + 1
            issue = {
                "id": 10_000 + number, "number": number, "state": "open",
                "title": body.get("title", ""), "body": body.get("body", ""),
                "labels": [{"name": name} for name in body.get("labels", [])],
                "html_url": f"{self.url}/{full_name}/issues/{number}", "repository": full_name,
            }
            self._issues.append(issue)
            return HTTPStatus.CREATED, dict(issue)

    def _list_issues(self, full_name: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        label = _first(query, "labels")
        matching = [i for i in self.issues() if i["repository"] == full_name
                    and (label is None or label in {lbl["name"] for lbl in i["labels"]})]
        return HTTPStatus.OK, _page(matching, query)

    def _get_issue(self, full_name: str, number: int) -> tuple[int, Any]:
        found = [i for i in self.issues() if i["number"] == number and i["repository"] == full_name]
        return (HTTPStatus.OK, found[0]) if found else _not_found()

    # -- git data --------------------------------------------------------------------------
    def _get_ref(self, full_name: str, ref: str) -> tuple[int, Any]:
        with self._lock:
            sha = self._repository(full_name).refs.get(ref)
        if sha is None:
            return _not_found()
        return HTTPStatus.OK, {"ref": f"refs/{ref}", "object": {"sha": sha, "type": "commit"}}

    def _get_commit(self, full_name: str, sha: str) -> tuple[int, Any]:
        with self._lock:
            commit = self._repository(full_name).commits.get(sha)
        return (HTTPStatus.OK, dict(commit)) if commit else _not_found()

    def _create_tree(self, full_name: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            repository = self._repository(full_name)
            files = dict(repository.trees.get(body.get("base_tree") or "", {}))
            for entry in body.get("tree") or []:
                if entry.get("type") != "blob" or not isinstance(entry.get("content"), str):
                    return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": "only blobs with inline content are modelled"}
                files[entry["path"]] = entry["content"]
            return HTTPStatus.CREATED, {"sha": repository.add_tree(files)}

    def _create_commit(self, full_name: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            repository = self._repository(full_name)
            parents = list(body.get("parents") or [])
            if body.get("tree") not in repository.trees or any(p not in repository.commits for p in parents):
                return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": "tree or parent does not exist"}
            sha = repository.add_commit(str(body.get("message", "")), body["tree"], parents)
            return HTTPStatus.CREATED, {"sha": sha}

    def _create_ref(self, full_name: str, body: dict[str, Any]) -> tuple[int, Any]:
        ref = str(body.get("ref", "")).removeprefix("refs/")
        with self._lock:
            repository = self._repository(full_name)
            if ref in repository.refs:
                return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": "Reference already exists"}
            if body.get("sha") not in repository.commits:
                return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": "Object does not exist"}
            repository.refs[ref] = body["sha"]
        return HTTPStatus.CREATED, {"ref": f"refs/{ref}", "object": {"sha": body["sha"], "type": "commit"}}

    def _update_ref(self, full_name: str, ref: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self._lock:
            repository = self._repository(full_name)
            if ref not in repository.refs:
                return _not_found()
            if body.get("sha") not in repository.commits:
                return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": "Object does not exist"}
            repository.refs[ref] = body["sha"]
        return HTTPStatus.OK, {"ref": f"refs/{ref}", "object": {"sha": body["sha"], "type": "commit"}}

    # -- pulls -----------------------------------------------------------------------------
    def _create_pull(self, full_name: str, body: dict[str, Any]) -> tuple[int, Any]:
        head, base = str(body.get("head", "")), str(body.get("base", ""))
        with self._lock:
            repository = self._repository(full_name)
            if f"heads/{head}" not in repository.refs or f"heads/{base}" not in repository.refs:
                return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": "Validation Failed: head or base does not exist"}
            if any(p["repository"] == full_name and p["head"]["ref"] == head and p["state"] == "open"
                   for p in self._pulls):
                return HTTPStatus.UNPROCESSABLE_ENTITY, {"message": f"A pull request already exists for {head}."}
            number = len(self._pulls) + 1
            owner = full_name.split("/")[0]
            pull = {
                "id": 20_000 + number, "number": number, "state": "open",
                "title": body.get("title", ""), "body": body.get("body", ""),
                "head": {"ref": head, "label": f"{owner}:{head}", "sha": repository.refs[f"heads/{head}"]},
                "base": {"ref": base, "sha": repository.refs[f"heads/{base}"]},
                "html_url": f"{self.url}/{full_name}/pull/{number}", "repository": full_name,
            }
            self._pulls.append(pull)
            return HTTPStatus.CREATED, dict(pull)

    def _list_pulls(self, full_name: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        head = _first(query, "head")  # "owner:branch", as GitHub takes it
        state = _first(query, "state") or "open"
        matching = [p for p in self.pulls() if p["repository"] == full_name
                    and (head is None or p["head"]["label"] == head)
                    and (state == "all" or p["state"] == state)]
        return HTTPStatus.OK, _page(matching, query)

    def _get_pull(self, full_name: str, number: int) -> tuple[int, Any]:
        found = [p for p in self.pulls() if p["number"] == number and p["repository"] == full_name]
        return (HTTPStatus.OK, found[0]) if found else _not_found()

    def page(self, path: str) -> tuple[int, Any] | None:
        match = PAGE_PATH.match(urlsplit(path).path)
        if not match:
            return None
        full_name, number = f"{match['owner']}/{match['repo']}", int(match["number"])
        if match["kind"] == "issues":
            return self._get_issue(full_name, number)
        status, pull = self._get_pull(full_name, number)
        if status != HTTPStatus.OK:
            return status, pull
        return status, {**pull, "files": self.files_at(full_name, pull["head"]["ref"])}

    # -- routing ---------------------------------------------------------------------------
    def route(self, method: str, path: str) -> tuple[Callable[..., tuple[int, Any]], tuple[Any, ...], bool] | None:
        """The operation for a request, its leading arguments, and whether it is a keyed write
        (one that faults strike)."""
        parts = urlsplit(path)
        match = REPOSITORY_PATH.match(parts.path)
        if not match:
            return None
        full_name, rest, query = f"{match['owner']}/{match['repo']}", match["rest"], parse_qs(parts.query)
        routes: list[tuple[str, str, Callable[..., tuple[int, Any]], bool]] = [
            ("GET", r"issues", lambda: self._list_issues(full_name, query), False),
            ("GET", r"issues/(\d+)", lambda n: self._get_issue(full_name, int(n)), False),
            ("POST", r"issues", lambda body: self._create_issue(full_name, body), True),
            ("GET", r"git/ref/(heads/.+)", lambda ref: self._get_ref(full_name, ref), False),
            ("GET", r"git/commits/([0-9a-f]+)", lambda sha: self._get_commit(full_name, sha), False),
            ("POST", r"git/trees", lambda body: self._create_tree(full_name, body), False),
            ("POST", r"git/commits", lambda body: self._create_commit(full_name, body), False),
            ("POST", r"git/refs", lambda body: self._create_ref(full_name, body), False),
            ("PATCH", r"git/refs/(heads/.+)", lambda ref, body: self._update_ref(full_name, ref, body), False),
            ("GET", r"pulls", lambda: self._list_pulls(full_name, query), False),
            ("GET", r"pulls/(\d+)", lambda n: self._get_pull(full_name, int(n)), False),
            ("POST", r"pulls", lambda body: self._create_pull(full_name, body), True),
        ]
        for route_method, pattern, operation, keyed in routes:
            found = re.fullmatch(pattern, rest)
            if route_method == method and found:
                return operation, found.groups(), keyed
        return None


def _count_by_key(records: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        key = _key_of(record.get("body") or "")
        if key:
            counts[key] = counts.get(key, 0) + 1
    return counts


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _page(records: list[dict[str, Any]], query: dict[str, list[str]]) -> list[dict[str, Any]]:
    per_page = int(_first(query, "per_page") or "30")
    page = int(_first(query, "page") or "1")
    return records[(page - 1) * per_page: page * per_page]


def _not_found() -> tuple[int, Any]:
    return HTTPStatus.NOT_FOUND, {"message": "Not Found"}


def _handler_for(github: LocalGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
            return

        def _reply(self, status: int, document: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:  # noqa: PLR0911 — it returns once it has answered
            page = github.page(self.path) if self.command == "GET" else None
            if page is not None:
                self._reply(*page)
                return
            if self.headers.get("Authorization") != f"Bearer {github.token}":
                self._reply(HTTPStatus.UNAUTHORIZED, {"message": "Bad credentials"})
                return
            routed = github.route(self.command, self.path)
            if routed is None:
                self._reply(HTTPStatus.NOT_FOUND, {"message": "Not Found"})
                return
            operation, arguments, keyed = routed
            if self.command == "GET":
                self._reply(*operation(*arguments))
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"message": "Body too large"})
                self.close_connection = True
                return
            body = json.loads(self.rfile.read(length) or b"{}")
            fault = github._receive_write(_key_of(str(body.get("body") or ""))) if keyed else None
            if fault and fault.kind == "fail":
                self._reply(HTTPStatus.SERVICE_UNAVAILABLE, {"message": "Service Unavailable"})
                return
            if fault and fault.kind == "rate_limit":
                self._reply(fault.status, *fault.rate_limit_answer(time.time()))  # nothing written
                return
            if fault and fault.kind == "slow":
                time.sleep(fault.delay_s)  # the write lands, late: after the caller gave up waiting
            status, document = operation(*arguments, body)
            if fault and fault.kind == "drop_response":
                self.close_connection = True
                self.connection.shutdown(2)  # accepted, and the answer never arrives
                return
            self._reply(status, document)

        do_GET = do_POST = do_PATCH = _handle  # noqa: N815 — the base class's names

    return Handler
