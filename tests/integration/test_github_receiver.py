"""The ticket receiver against the local GitHub-compatible tracker over real HTTP (loopback)."""
from __future__ import annotations

import time

import pytest

from agentledger.receivers import (
    GitHubIssues,
    ReceiverErrorResponse,
    ReceiverNoResponseError,
    ReceiverRejectedError,
    ReceiverUnavailableError,
)
from infra.local.github_receiver import LocalGitHub

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


def _client(tracker: LocalGitHub, token: str = TOKEN, timeout_s: float = 2.0) -> GitHubIssues:
    return GitHubIssues(tracker.url, "acme/widgets", token, timeout_s)


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


def test_bad_credentials_are_a_rejection(tracker):
    with pytest.raises(ReceiverRejectedError, match="401"):
        _client(tracker, token="wrong").send("run-1/ticket/abc", PAYLOAD)


def test_nothing_listening_means_the_write_was_not_sent():
    with pytest.raises(ReceiverUnavailableError):
        GitHubIssues("http://127.0.0.1:9", "acme/widgets", TOKEN, 1.0).send("k", PAYLOAD)
