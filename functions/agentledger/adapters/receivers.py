"""The receiving systems effects are written to (GitHub issues and pull requests, SNS), each
able to confirm a write and to be searched for the idempotency key the write carries. What each
error says about the write is in `agentledger.ports`."""
from __future__ import annotations

import hashlib
import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from ..config import check_github_api_url
from ..ports import (
    Confirmation,
    ReceiverErrorResponse,
    ReceiverNoResponseError,
    ReceiverRateLimitedError,
    ReceiverRejectedError,
    ReceiverUnavailableError,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

MARKER_PREFIX = "agentledger-key:"
TICKET_LABEL = "agentledger"
BRANCH_PREFIX = "agentledger"
MAX_LIST_PAGES = 10


def key_marker(key: str) -> str:
    return f"<!-- {MARKER_PREFIX} {key} -->"


def carries_marker(body: str | None, key: str) -> bool:
    """The key marker as the body's last line, where agentledger puts it: anywhere else (quoted
    inside the request text, say) it was not written by agentledger for this key."""
    lines = (body or "").rstrip().splitlines()
    return bool(lines) and lines[-1].strip() == key_marker(key)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as an error: following it would send the token to wherever it points."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


class GitHubApi:
    """GitHub's REST API, its answers sorted into what is known about a write."""

    def __init__(self, api_url: str, repository: str, token: str, timeout_s: float) -> None:
        self.api = check_github_api_url(api_url).rstrip("/")
        self.repository = repository
        self._token = token
        self._timeout_s = timeout_s

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """`path` is relative to the repository."""
        path = f"/repos/{self.repository}/{path}"
        request = urllib.request.Request(
            self.api + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self._token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "agentledger",
                     "Content-Type": "application/json"},
        )
        try:
            with _OPENER.open(request, timeout=self._timeout_s) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            if 300 <= error.code < 400:
                raise ReceiverRejectedError(
                    f"GitHub answered {error.code} to {method} {path}, a redirect to "
                    f"{str(error.headers.get('Location', '?'))[:200]}; not followed with the token (a renamed or "
                    "moved repository: set githubRepository, or githubApiUrl, to where it is now)",
                    {"status": error.code}) from error
            detail = _error_body(error)
            message = str(detail.get("message", ""))
            limit = github_rate_limit(error.code, dict(error.headers.items()), message, time.time())
            if limit is not None:
                detail["retry_after_s"] = limit.retry_after_s
                named = (f"retry after {limit.retry_after_s:.0f} s" if limit.retry_after_s is not None
                         else "no time named")
                raise ReceiverRateLimitedError(
                    f"GitHub rate-limited {method} {path} with {error.code} ({named}): {message[:200]}", detail,
                    limit.retry_after_s) from error
            if error.code == 408 or error.code >= 500:
                raise ReceiverErrorResponse(f"GitHub answered {error.code} to {method} {path}", detail) from error
            raise ReceiverRejectedError(f"GitHub refused {method} {path} with {error.code}: "
                                        f"{detail.get('message', '')}", detail) from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, (ConnectionRefusedError, socket.gaierror)):
                raise ReceiverUnavailableError(f"GitHub at {self.api} is unreachable: {error.reason}") from error
            raise ReceiverNoResponseError(f"no answer from GitHub to {method} {path}: {error.reason}") from error
        except (TimeoutError, http.client.HTTPException, ConnectionError) as error:
            raise ReceiverNoResponseError(f"no answer from GitHub to {method} {path}: {error!r}") from error


@dataclass(frozen=True)
class RateLimit:
    retry_after_s: float | None  # None: GitHub named no time, so wait at least a minute, backing off


def github_rate_limit(status: int, headers: Mapping[str, str], message: str, now: float) -> RateLimit | None:
    """Whether an error answer is one of GitHub's rate limits, and how long it asks to wait, as
    GitHub documents them: a primary or secondary limit answers 403 or 429; `retry-after` names the
    seconds to wait; `x-ratelimit-remaining: 0` means wait until `x-ratelimit-reset` (epoch seconds);
    otherwise wait at least a minute. A 403 that is none of these (no permission) is not a limit."""
    if status not in (403, 429):
        return None
    named = {name.lower(): value for name, value in headers.items()}
    retry_after = _retry_after_s(named.get("retry-after"), now)
    if retry_after is not None:
        return RateLimit(retry_after)
    if named.get("x-ratelimit-remaining", "").strip() == "0":
        reset = named.get("x-ratelimit-reset", "").strip()
        return RateLimit(max(float(reset) - now, 0.0) if reset.isdigit() else None)
    if status == 429 or "rate limit" in message.lower():
        return RateLimit(None)
    return None


def _retry_after_s(value: str | None, now: float) -> float | None:
    """`Retry-After` as seconds or as an HTTP date; None when absent or unreadable."""
    value = (value or "").strip()
    if value.isdigit():
        return float(value)
    try:
        return max(parsedate_to_datetime(value).timestamp() - now, 0.0) if value else None
    except (TypeError, ValueError):
        return None


class GitHubIssues:
    """Tickets as GitHub issues. Issues are found again by listing the agentledger label (a
    consistent read, unlike the search API) and matching the key marker."""

    name = "github-issues"
    CONTENT_REQUESTS = 1  # what one send spends of the token's content-creation budget: the POST of the issue

    def __init__(self, api: GitHubApi) -> None:
        self._api = api

    def find(self, key: str) -> list[Confirmation]:
        found: list[Confirmation] = []
        for page in range(1, MAX_LIST_PAGES + 1):
            query = urllib.parse.urlencode({"labels": TICKET_LABEL, "state": "all", "per_page": 100, "page": page})
            issues = self._api.call("GET", f"issues?{query}")
            found += [_issue_confirmation(i) for i in issues if carries_marker(i.get("body"), key)]
            if len(issues) < 100:
                return found
        return found

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        body = f"{payload['body']}\n\n{key_marker(key)}\n"
        issue = self._api.call("POST", "issues", {"title": payload["title"], "body": body,
                                                  "labels": [TICKET_LABEL, *payload.get("labels", [])]})
        return _issue_confirmation(issue)

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        issue = self._api.call("GET", f"issues/{confirmation.raw.get('number')}")
        if not carries_marker(issue.get("body"), key):
            raise ReceiverErrorResponse(f"issue {confirmation.receiver_id} does not carry key {key}", issue)
        return _issue_confirmation(issue)


def pull_request_branch(key: str) -> str:
    """`agentledger/<run>/<digest>`: named after the run, and one per content the run commits to,
    so a replanned run never pushes onto the branch of a pull request it opened before."""
    run_id, _, rest = key.partition("/")
    return f"{BRANCH_PREFIX}/{run_id}/{rest.rpartition('/')[2]}"


class GitHubPullRequests:
    """The generated files as a pull request: a commit on the configured base branch's head, on a
    branch named after the run and the key, and a pull request whose body carries the key marker.
    It is found again by listing pull requests with that head branch and matching the marker."""

    name = "github-pulls"
    CONTENT_REQUESTS = 4  # the tree, the commit, the branch and the pull request

    def __init__(self, api: GitHubApi, base_branch: str) -> None:
        self._api = api
        self._base = base_branch

    def find(self, key: str) -> list[Confirmation]:
        head = urllib.parse.quote(f"{self._api.owner}:{pull_request_branch(key)}", safe="")
        pulls = self._api.call("GET", f"pulls?head={head}&state=all&per_page=100")
        return [_pull_confirmation(p) for p in pulls if carries_marker(p.get("body"), key)]

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        branch = pull_request_branch(key)
        try:
            self._push(branch, payload)
        except ReceiverNoResponseError as error:
            # Nothing a person sees exists before the pull request does: safe to send again.
            raise ReceiverErrorResponse(f"the branch {branch} was not pushed: {error}", error.response) from error
        pull = self._api.call("POST", "pulls", {"title": payload["title"], "head": branch, "base": self._base,
                                                "body": f"{payload['body']}\n\n{key_marker(key)}\n",
                                                "maintainer_can_modify": False})
        return _pull_confirmation(pull)

    def _push(self, branch: str, payload: dict[str, Any]) -> None:
        base = self._api.call("GET", f"git/ref/heads/{urllib.parse.quote(self._base)}")["object"]["sha"]
        base_tree = self._api.call("GET", f"git/commits/{base}")["tree"]["sha"]
        entries = [{"path": path, "mode": "100644", "type": "blob", "content": content}
                   for path, content in sorted(payload["files"].items())]
        tree = self._api.call("POST", "git/trees", {"base_tree": base_tree, "tree": entries})["sha"]
        commit = self._api.call("POST", "git/commits", {"message": payload["commit_message"], "tree": tree,
                                                        "parents": [base]})["sha"]
        try:
            self._api.call("POST", "git/refs", {"ref": f"refs/heads/{branch}", "sha": commit})
        except ReceiverRejectedError as error:
            if error.response.get("status") != 422:
                raise
            # An earlier attempt pushed the branch and died before opening the pull request.
            self._api.call("PATCH", f"git/refs/heads/{branch}", {"sha": commit, "force": True})

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        pull = self._api.call("GET", f"pulls/{confirmation.raw.get('number')}")
        if not carries_marker(pull.get("body"), key):
            raise ReceiverErrorResponse(f"pull request {confirmation.receiver_id} does not carry key {key}", pull)
        return _pull_confirmation(pull)


def _pull_confirmation(pull: dict[str, Any]) -> Confirmation:
    return Confirmation(receiver_id=f"PR #{pull['number']}", url=pull.get("html_url"),
                        raw={"number": pull["number"], "id": pull.get("id"), "state": pull.get("state"),
                             "head": (pull.get("head") or {}).get("ref")})


def _issue_confirmation(issue: dict[str, Any]) -> Confirmation:
    return Confirmation(receiver_id=f"#{issue['number']}", url=issue.get("html_url"),
                        raw={"number": issue["number"], "id": issue.get("id"), "state": issue.get("state")})


def _error_body(error: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        parsed = json.loads(error.read() or b"{}")
    except (json.JSONDecodeError, OSError):
        return {"status": error.code}
    return {"status": error.code, **(parsed if isinstance(parsed, dict) else {})}


class SnsNotifications:
    """Notifications on an SNS FIFO topic. SNS cannot be searched, so the key goes in as the
    message deduplication id: a resend within the five-minute window is accepted and dropped."""

    name = "sns-fifo"

    def __init__(self, topic_arn: str, sns_client: Any) -> None:
        self._topic_arn = topic_arn
        self._sns = sns_client

    def find(self, key: str) -> list[Confirmation]:
        return []

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        try:
            response = self._sns.publish(
                TopicArn=self._topic_arn, Subject=payload["subject"][:100], Message=json.dumps(payload["message"]),
                MessageGroupId=payload["group"], MessageDeduplicationId=deduplication_id(key),
                MessageAttributes={"agentledger_key": {"DataType": "String", "StringValue": key}},
            )
        except (EndpointConnectionError, ConnectTimeoutError) as error:
            raise ReceiverUnavailableError(f"SNS is unreachable: {error}") from error
        except ReadTimeoutError as error:
            raise ReceiverNoResponseError(f"no answer from SNS: {error}") from error
        except ClientError as error:
            details = dict(error.response["Error"])
            code = details["Code"]
            if code in ("Throttling", "ThrottledException", "InternalError", "ServiceUnavailable"):
                raise ReceiverErrorResponse(f"SNS answered {code}", details) from error
            raise ReceiverRejectedError(f"SNS refused the notification: {code}", details) from error
        return Confirmation(receiver_id=response["MessageId"], raw={"sequence": response.get("SequenceNumber")})

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        return confirmation  # the MessageId is SNS's acknowledgement that it holds the message


def deduplication_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
