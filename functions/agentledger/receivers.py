"""The systems effects are written to, each able to confirm a write and to be searched for
the idempotency key the write carries.

Errors say what is known about the write: `ReceiverUnavailableError` — it was not sent;
`ReceiverErrorResponse` — the receiver answered with an error; `ReceiverNoResponseError` — it
was sent and nothing came back, so it may or may not be there; `ReceiverRejectedError` — refused
for a reason a retry will not fix."""
from __future__ import annotations

import hashlib
import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

MARKER_PREFIX = "agentledger-key:"
TICKET_LABEL = "agentledger"
MAX_LIST_PAGES = 10


@dataclass(frozen=True)
class Confirmation:
    receiver_id: str
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


class ReceiverError(Exception):
    def __init__(self, message: str, response: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.response = response or {}


class ReceiverUnavailableError(ReceiverError):
    pass


class ReceiverErrorResponse(ReceiverError):
    pass


class ReceiverNoResponseError(ReceiverError):
    pass


class ReceiverRejectedError(ReceiverError):
    pass


class Receiver(Protocol):
    name: str

    def find(self, key: str) -> list[Confirmation]:
        """Every record at the receiver that carries `key` (empty when it cannot be searched)."""

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation: ...

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        """The receiver's own account of the write, checked to carry `key`."""


def key_marker(key: str) -> str:
    return f"<!-- {MARKER_PREFIX} {key} -->"


class GitHubIssues:
    """Tickets as GitHub issues, over the REST API. Issues are found again by listing the
    agentledger label (a consistent read, unlike the search API) and matching the key marker."""

    name = "github-issues"

    def __init__(self, api_url: str, repository: str, token: str, timeout_s: float) -> None:
        self._api = api_url.rstrip("/")
        self._repository = repository
        self._token = token
        self._timeout_s = timeout_s

    def find(self, key: str) -> list[Confirmation]:
        marker = key_marker(key)
        found: list[Confirmation] = []
        for page in range(1, MAX_LIST_PAGES + 1):
            query = urllib.parse.urlencode({"labels": TICKET_LABEL, "state": "all", "per_page": 100, "page": page})
            issues = self._call("GET", f"/repos/{self._repository}/issues?{query}")
            found += [_issue_confirmation(i) for i in issues if marker in (i.get("body") or "")]
            if len(issues) < 100:
                return found
        return found

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        body = f"{payload['body']}\n\n{key_marker(key)}\n"
        issue = self._call("POST", f"/repos/{self._repository}/issues",
                           {"title": payload["title"], "body": body, "labels": [TICKET_LABEL, *payload.get("labels", [])]})
        return _issue_confirmation(issue)

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        issue = self._call("GET", f"/repos/{self._repository}/issues/{confirmation.raw.get('number')}")
        if key_marker(key) not in (issue.get("body") or ""):
            raise ReceiverErrorResponse(f"issue {confirmation.receiver_id} does not carry key {key}", issue)
        return _issue_confirmation(issue)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            self._api + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self._token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "agentledger",
                     "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = _error_body(error)
            if error.code in (408, 429) or error.code >= 500:
                raise ReceiverErrorResponse(f"GitHub answered {error.code} to {method} {path}", detail) from error
            raise ReceiverRejectedError(f"GitHub refused {method} {path} with {error.code}: "
                                        f"{detail.get('message', '')}", detail) from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, (ConnectionRefusedError, socket.gaierror)):
                raise ReceiverUnavailableError(f"GitHub at {self._api} is unreachable: {error.reason}") from error
            raise ReceiverNoResponseError(f"no answer from GitHub to {method} {path}: {error.reason}") from error
        except (TimeoutError, http.client.HTTPException, ConnectionError) as error:
            raise ReceiverNoResponseError(f"no answer from GitHub to {method} {path}: {error!r}") from error


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
            code = error.response["Error"]["Code"]
            if code in ("Throttling", "ThrottledException", "InternalError", "ServiceUnavailable"):
                raise ReceiverErrorResponse(f"SNS answered {code}", error.response["Error"]) from error
            raise ReceiverRejectedError(f"SNS refused the notification: {code}", error.response["Error"]) from error
        return Confirmation(receiver_id=response["MessageId"], raw={"sequence": response.get("SequenceNumber")})

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        return confirmation  # the MessageId is SNS's acknowledgement that it holds the message


def deduplication_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
