"""GitHub's rate limits told from its other refusals, as GitHub documents them: a primary or
secondary limit answers 403 or 429; `retry-after` names the wait; `x-ratelimit-remaining: 0` means
wait until `x-ratelimit-reset`; with neither, wait at least a minute. A 403 for want of permission
stays a refusal."""
from __future__ import annotations

from email.utils import formatdate

import pytest

from agentledger.adapters.receivers import RateLimit, github_rate_limit
from agentledger.effects import MAX_RATE_LIMIT_WAIT_S, MIN_RATE_LIMIT_WAIT_S, rate_limit_wait_s

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."


def test_a_429_with_retry_after_waits_the_seconds_it_names() -> None:
    assert github_rate_limit(429, {"Retry-After": "30"}, SECONDARY, NOW) == RateLimit(30)


def test_retry_after_as_an_http_date_waits_until_then() -> None:
    assert github_rate_limit(403, {"retry-after": formatdate(NOW + 90, usegmt=True)}, "", NOW) == RateLimit(90)


def test_a_403_with_no_requests_remaining_waits_until_the_reset() -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 120)}
    assert github_rate_limit(403, headers, "API rate limit exceeded for user ID 1.", NOW) == RateLimit(120)


def test_a_reset_already_past_is_no_wait_of_its_own_and_the_run_still_waits_a_second() -> None:
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) - 5)}
    limit = github_rate_limit(403, headers, "", NOW)
    assert limit == RateLimit(0.0) and rate_limit_wait_s(limit.retry_after_s, 0) == 1


@pytest.mark.parametrize(("status", "message"), [(403, SECONDARY), (429, "")])
def test_a_limit_that_names_no_time_waits_at_least_a_minute_and_backs_off(status: int, message: str) -> None:
    limit = github_rate_limit(status, {"x-ratelimit-remaining": "4999"}, message, NOW)

    assert limit == RateLimit(None)
    assert [rate_limit_wait_s(None, earlier) for earlier in range(6)] == [60, 120, 240, 480, 900, 900]
    assert MIN_RATE_LIMIT_WAIT_S == 60 and MAX_RATE_LIMIT_WAIT_S == 900


@pytest.mark.parametrize(("status", "message"), [
    (403, "Resource not accessible by integration"), (403, "Must have admin rights to Repository."),
    (404, "Not Found"), (422, "Validation Failed"), (500, "rate limit"),
])
def test_a_refusal_that_is_not_a_rate_limit_is_not_taken_for_one(status: int, message: str) -> None:
    assert github_rate_limit(status, {"x-ratelimit-remaining": "4999"}, message, NOW) is None
