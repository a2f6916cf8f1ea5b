"""Bounds the API and its clients agree on, with no heavy import: the CLI reads them too."""
from __future__ import annotations

import math
from dataclasses import dataclass

MAX_UPLOAD_BYTES = 100 << 20  # a repository tarball uploaded through POST /uploads
# How the local API refuses a directory outside the roots `serve` reads; the CLI then uploads the
# tree instead, as it does for a deployed API.
OUTSIDE_ROOTS = "is outside the directories this server reads"


@dataclass(frozen=True)
class StartRate:
    """How fast runs may be started (POST /runs): a token bucket that holds `burst` starts and
    refills `per_s` a second. API Gateway's method throttling enforces it on AWS and the local API
    locally, both from START_RATE; a start past it is answered 429 with Retry-After, before the
    api function sees it, so nothing was started and the same request may be sent again."""

    per_s: float
    burst: int

    def refusal(self) -> str:
        return (f"too many runs started: this API starts {self.per_s:g} a second (bursts of {self.burst}); "
                "send the same request again after Retry-After seconds")


# The burst is the API function's default reserved concurrency (apiConcurrency): a burst past it
# would meet Lambda's own throttle, which API Gateway answers with a 5xx instead of this 429.
START_RATE = StartRate(per_s=10, burst=20)


@dataclass(frozen=True)
class WriteBudget:
    """How many content-creating requests a receiver takes from one token, a minute and an hour:
    every run's writes share it, so they are paced to it instead of meeting the receiver's limit."""

    per_minute: int
    per_hour: int


# GitHub's secondary rate limit on content creation, per token: 80 requests a minute, 500 an hour
# (docs.github.com, "Rate limits for the REST API"; checked 2026-12-06).
GITHUB_CONTENT_BUDGET = WriteBudget(per_minute=80, per_hour=500)


# The review keeper's schedule, and the heartbeat a pending review's task must hear: a keeper
# outage of two passes is ridden out, and a week's review costs 672 passes (every 5 minutes for a
# 15-minute heartbeat it was 2,016, as much as the whole rest of a run's workflow).
REVIEW_KEEPER_INTERVAL_MINUTES = 15
REVIEW_HEARTBEAT_SECONDS = 3 * REVIEW_KEEPER_INTERVAL_MINUTES * 60 + 15 * 60


def retry_after_s(wait_s: float) -> int:
    """Retry-After in whole seconds, at least one, for a request that would have to wait `wait_s`."""
    return max(1, math.ceil(wait_s))
