"""How fast runs may be started, and what a client does when it starts them faster: the local
API's token bucket (API Gateway's method throttle on AWS) and the CLI's wait-and-send-again on a
429, against a fake HTTP layer and clock."""
from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

import pytest

from agentledger.cli.client import MAX_THROTTLED_WAIT_S, THROTTLED_ATTEMPTS, ApiClient, ApiError
from agentledger.limits import StartRate, retry_after_s
from agentledger.local.start_rate import TokenBucket

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_is_taken_at_once_and_then_starts_come_at_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(StartRate(per_s=0.5, burst=2), clock)

    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() == pytest.approx(2.0)  # refused: nothing taken, so the wait is not pushed out
    clock.now += 1
    assert bucket.take() == pytest.approx(1.0)
    clock.now += 1
    assert bucket.take() == 0.0
    assert retry_after_s(0.2) == 1 and retry_after_s(2.0) == 2 and retry_after_s(2.1) == 3


def test_an_idle_bucket_holds_no_more_than_its_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(StartRate(per_s=1, burst=3), clock)
    clock.now += 3600

    assert [bucket.take() == 0.0 for _ in range(4)] == [True, True, True, False]


@pytest.mark.parametrize("rate", [StartRate(per_s=0, burst=1), StartRate(per_s=1, burst=0)])
def test_a_start_rate_that_would_never_let_a_start_through_is_refused(rate: StartRate) -> None:
    with pytest.raises(ValueError, match="positive rate"):
        TokenBucket(rate)


class FakeHttp:
    """urlopen's stand-in: answers the queued statuses in turn and keeps each request it was sent."""

    def __init__(self, *answers: tuple[int, dict[str, str], Any]) -> None:
        self.answers = list(answers)
        self.requests: list[urllib.request.Request] = []

    def __call__(self, request: urllib.request.Request, timeout: float) -> io.BytesIO:
        self.requests.append(request)
        status, headers, body = self.answers.pop(0)
        data = json.dumps(body).encode()
        if status >= 400:
            message = Message()
            for name, value in headers.items():
                message[name] = value
            raise urllib.error.HTTPError(request.full_url, status, "refused", message, io.BytesIO(data))
        return io.BytesIO(data)


THROTTLED = (429, {"Retry-After": "3"}, {"error": "Too Many Requests", "message": "too many runs started"})
CREATED = (201, {}, {"run_id": "run-1"})


def _client(http: FakeHttp, slept: list[float]) -> ApiClient:
    signatures = iter(range(100))
    return ApiClient("http://127.0.0.1:8787", lambda method, url, headers, data: {
        **headers, "Authorization": f"signature {next(signatures)}"}, urlopen=http, sleep=slept.append)


def test_a_throttled_start_waits_its_retry_after_and_is_sent_again_signed_afresh_with_the_same_key(
        capsys: pytest.CaptureFixture[str]) -> None:
    http, slept = FakeHttp(THROTTLED, CREATED), []

    created = _client(http, slept).post("/runs", {"repository": "r"}, headers={"Idempotency-Key": "k-1"})

    assert created == {"run_id": "run-1"} and slept == [3.0]
    assert [r.get_header("Idempotency-key") for r in http.requests] == ["k-1", "k-1"]
    assert [r.get_header("Authorization") for r in http.requests] == ["signature 0", "signature 1"]
    waiting = capsys.readouterr().err
    assert "429: too many runs started" in waiting and "waiting 3 s before sending POST /runs again" in waiting


def test_a_start_throttled_every_time_fails_with_one_clear_message_after_bounded_waits() -> None:
    long_wait = (429, {"Retry-After": "120"}, THROTTLED[2])
    no_header = (429, {}, THROTTLED[2])
    http, slept = FakeHttp(long_wait, no_header, *[THROTTLED] * (THROTTLED_ATTEMPTS - 2)), []

    with pytest.raises(ApiError) as raised:
        _client(http, slept).post("/runs", {"repository": "r"})

    assert raised.value.status == 429 and len(http.requests) == THROTTLED_ATTEMPTS
    assert f"still throttled after {THROTTLED_ATTEMPTS} attempts" in raised.value.message
    assert slept == [MAX_THROTTLED_WAIT_S, 4.0, 3.0, 3.0]  # capped; without Retry-After, backing off


def test_a_refusal_that_is_not_a_throttle_is_not_sent_again() -> None:
    http, slept = FakeHttp((422, {}, {"message": "body.request: Field required"}), CREATED), []

    with pytest.raises(ApiError, match="Field required"):
        _client(http, slept).post("/runs", {})

    assert len(http.requests) == 1 and slept == []
