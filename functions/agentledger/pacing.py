"""GitHub writes paced to the token's budget, so a flood of runs queues for it instead of meeting
GitHub's secondary rate limit.

GitHub allows one token 80 content-creating requests a minute and 500 an hour. Every run's ticket
and pull request spend that one budget. Sent regardless, past about 100 runs an hour they are
refused, and GitHub asks for waits of up to an hour, longer than a run waits for a limit. Paced,
a write takes its requests from a budget kept in DynamoDB, shared by every run; when the budget
has no room, nothing is sent, and the write is answered as a rate limit, with the wait until the
next window. The state machine waits it out in its Wait state, in turns of at most 15 minutes,
and sends again."""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from .ports import Confirmation, Receiver, ReceiverRateLimitedError, WriteBudgetPort

if TYPE_CHECKING:
    from collections.abc import Callable

# Every write held back in a window would ask again the moment it ends, all at once (a burst on the
# budget's counter and on the state machine): each waits up to this much longer, at random.
JITTER_S = 30.0


def _jitter() -> float:
    return random.uniform(0, JITTER_S)  # noqa: S311 — spreading retries, not a secret


class PacedReceiver:
    def __init__(self, receiver: Receiver, budget: WriteBudgetPort, requests_per_send: int,
                 jitter: Callable[[], float] = _jitter) -> None:
        self.receiver = receiver
        self.budget = budget
        self.requests_per_send = requests_per_send
        self.jitter = jitter
        self.name = receiver.name

    def find(self, key: str) -> list[Confirmation]:
        return self.receiver.find(key)

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        wait_s = self.budget.take(self.requests_per_send)
        if wait_s > 0:
            wait_s += self.jitter()
            raise ReceiverRateLimitedError(
                f"{self.name}: the token's write budget is spent; {self.requests_per_send} request(s) wait "
                f"{wait_s:.0f} s for the next window", retry_after_s=wait_s, paced=True)
        return self.receiver.send(key, payload)

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        return self.receiver.read_back(confirmation, key)
