"""The ticket and pull-request receivers against the local GitHub-compatible receiver over real HTTP
(loopback)."""
from __future__ import annotations

import http.server
import threading
import time

import pytest

from agentledger.adapters.receivers import GitHubApi, GitHubIssues, GitHubPullRequests
from agentledger.local.github_receiver import LocalGitHub
from agentledger.ports import (
    ReceiverErrorResponse,
    ReceiverNoResponseError,
    ReceiverRateLimitedError,
    ReceiverRejectedError,
    ReceiverUnavailableError,
)

pytestmark = pytest.mark.integration

TOKEN = "test-token"
PAYLOAD = {"title": "t", "body": "summary", "labels": []}


@pytest.fixture
def tracker():
    local = LocalGitHub(TOKEN).start()
    yield local
    local.stop()


def _eventually(condition, timeout_s: float = 10.0):
    """The condition's first truthy value, polled until the deadline."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"not reached within {timeout_s}s"
        time.sleep(0.05)
    return value


def _api(tracker: LocalGitHub, token: str = TOKEN, timeout_s: float = 2.0) -> GitHubApi:
    return GitHubApi(tracker.url, "acme/widgets", token, timeout_s)


def _client(tracker: LocalGitHub, token: str = TOKEN, timeout_s: float = 2.0) -> GitHubIssues:
    return GitHubIssues(_api(tracker, token, timeout_s))


def test_a_written_issue_is_found_by_its_key_and_read_back(tracker):
    client = _client(tracker)
    created = client.send("run-1/ticket/abc", PAYLOAD)
    assert created.receiver_id == "#1"
    assert client.read_back(created, "run-1/ticket/abc").receiver_id == "#1"
    assert [c.receiver_id for c in client.find("run-1/ticket/abc")] == ["#1"]
    assert client.find("run-1/ticket/other") == []
    assert tracker.issues_by_key() == {"run-1/ticket/abc": 1}


def test_a_lost_response_is_reported_as_no_response_while_the_tracker_holds_the_issue(tracker):
    tracker.inject("drop_response")
    with pytest.raises(ReceiverNoResponseError):
        _client(tracker).send("run-1/ticket/abc", PAYLOAD)
    assert tracker.issues_by_key() == {"run-1/ticket/abc": 1}
    assert len(_client(tracker).find("run-1/ticket/abc")) == 1


def test_a_slow_tracker_times_out_and_the_write_lands_later(tracker):
    tracker.inject("slow", delay_s=1.5)
    with pytest.raises(ReceiverNoResponseError):
        _client(tracker, timeout_s=0.3).send("run-1/ticket/abc", PAYLOAD)
    assert _client(tracker).find("run-1/ticket/abc") == []
    # The slow request is still being served on its own thread; the issue appears when it ends.
    assert len(_eventually(lambda: _client(tracker).find("run-1/ticket/abc"))) == 1


def test_a_server_error_is_an_error_response_and_nothing_is_written(tracker):
    tracker.inject("fail")
    with pytest.raises(ReceiverErrorResponse) as raised:
        _client(tracker).send("run-1/ticket/abc", PAYLOAD)
    assert raised.value.response["status"] == 503
    assert tracker.issues() == []


@pytest.mark.parametrize(("status", "style", "named"), [
    (429, "retry_after", 7), (403, "retry_after", 7), (403, "reset", 7), (403, "message", None)])
def test_a_rate_limit_is_told_from_a_refusal_with_the_wait_it_names_and_nothing_is_written(tracker, status, style,
                                                                                             named):
    tracker.inject("rate_limit", delay_s=7, status=status, style=style)
    with pytest.raises(ReceiverRateLimitedError, match=f"rate-limited POST .* with {status}") as raised:
        _client(tracker).send("run-1/ticket/abc", PAYLOAD)
    assert raised.value.retry_after_s == (pytest.approx(named, abs=1.5) if named else None)
    assert "rate limit" in raised.value.response["message"]
    assert tracker.issues() == []
    assert _client(tracker).send("run-1/ticket/abc", PAYLOAD).receiver_id == "#1"


def test_bad_credentials_are_a_rejection(tracker):
    with pytest.raises(ReceiverRejectedError, match="401"):
        _client(tracker, token="wrong").send("run-1/ticket/abc", PAYLOAD)


def test_nothing_listening_means_the_write_was_not_sent():
    with pytest.raises(ReceiverUnavailableError):
        GitHubIssues(GitHubApi("http://127.0.0.1:9", "acme/widgets", TOKEN, 1.0)).send("k", PAYLOAD)


# -- pull requests ---------------------------------------------------------------------------------
PR_KEY = "run-1/pull_request/0123456789abcdef"
PR_PAYLOAD = {"title": "agentledger: tests", "body": "what the run did", "commit_message": "Add tests",
              "files": {"tests/test_calc.py": "def test_add():\n    assert 1 + 1 == 2\n"}}


def _pulls(tracker: LocalGitHub, timeout_s: float = 2.0) -> GitHubPullRequests:
    return GitHubPullRequests(_api(tracker, timeout_s=timeout_s), "main")


def test_a_pull_request_carries_the_files_on_a_branch_named_after_the_run_and_is_found_by_branch_and_key(tracker):
    pulls = _pulls(tracker)
    opened = pulls.send(PR_KEY, PR_PAYLOAD)
    assert opened.receiver_id == "PR #1" and opened.url.endswith("/acme/widgets/pull/1")
    assert opened.raw["head"] == "agentledger/run-1/0123456789abcdef"
    assert tracker.files_at("acme/widgets", "agentledger/run-1/0123456789abcdef") == PR_PAYLOAD["files"]
    assert tracker.files_at("acme/widgets", "main") == {}  # the base branch is untouched
    assert pulls.read_back(opened, PR_KEY).receiver_id == "PR #1"
    assert [c.receiver_id for c in pulls.find(PR_KEY)] == ["PR #1"]
    assert pulls.find("run-1/pull_request/ffffffffffffffff") == []
    assert tracker.pulls_by_key() == {PR_KEY: 1}


def test_a_lost_pull_request_response_is_no_response_and_the_pull_request_is_found_again(tracker):
    tracker.inject("drop_response", key_prefix="run-1/pull_request/")
    with pytest.raises(ReceiverNoResponseError):
        _pulls(tracker).send(PR_KEY, PR_PAYLOAD)
    assert [c.receiver_id for c in _pulls(tracker).find(PR_KEY)] == ["PR #1"]


def test_a_branch_pushed_by_an_attempt_that_died_is_moved_and_one_pull_request_is_opened(tracker):
    pulls = _pulls(tracker)
    pulls._push("agentledger/run-1/0123456789abcdef", {**PR_PAYLOAD, "files": {"stale.py": "x = 1\n"}})
    opened = pulls.send(PR_KEY, PR_PAYLOAD)
    assert tracker.files_at("acme/widgets", opened.raw["head"]) == PR_PAYLOAD["files"]
    assert tracker.pulls_by_key() == {PR_KEY: 1}


def test_a_failed_pull_request_creation_is_an_error_response_and_opens_nothing(tracker):
    tracker.inject("fail", key_prefix="run-1/pull_request/")
    with pytest.raises(ReceiverErrorResponse):
        _pulls(tracker).send(PR_KEY, PR_PAYLOAD)
    assert tracker.pulls() == []
    assert _pulls(tracker).send(PR_KEY, PR_PAYLOAD).receiver_id == "PR #1"


def test_a_second_pull_request_for_the_same_branch_is_refused(tracker):
    _pulls(tracker).send(PR_KEY, PR_PAYLOAD)
    with pytest.raises(ReceiverRejectedError, match="already exists"):
        _pulls(tracker).send(PR_KEY, PR_PAYLOAD)


def test_a_missing_base_branch_is_a_rejection_that_names_it(tracker):
    with pytest.raises(ReceiverRejectedError, match="404"):
        GitHubPullRequests(_api(tracker), "trunk").send(PR_KEY, PR_PAYLOAD)


def test_a_redirect_is_not_followed_with_the_token(tracker):
    """GitHub answers a renamed repository with a redirect; another host must never get the token."""
    seen: list[str | None] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 — http.server's name
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *args) -> None:
            pass

    class Redirecting(Elsewhere):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(307)
            self.send_header("Location", f"http://localhost:{other.server_address[1]}{self.path}")
            self.end_headers()

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    first = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    for server in (other, first):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = GitHubApi(f"http://127.0.0.1:{first.server_address[1]}", "acme/widgets", TOKEN, 2.0)
        with pytest.raises(ReceiverRejectedError, match="307 .* not followed with the token"):
            GitHubIssues(api).find("run-1/ticket/abc")
        assert seen == []
    finally:
        for server in (other, first):
            server.shutdown()
            server.server_close()
