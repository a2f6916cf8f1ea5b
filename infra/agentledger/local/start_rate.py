"""The local API's start rate: the token bucket API Gateway's method throttling keeps on AWS."""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentledger.limits import StartRate


class TokenBucket:
    """Holds `burst` tokens and refills `per_s` a second; a request takes one or is told how long
    until one is there."""

    def __init__(self, rate: StartRate, clock: Callable[[], float] = time.monotonic) -> None:
        if rate.per_s <= 0 or rate.burst < 1:
            raise ValueError(f"a start rate needs a positive rate and a burst of at least 1, got {rate}")
        self.rate = rate
        self._clock = clock
        self._tokens = float(rate.burst)
        self._updated = clock()
        self._lock = threading.Lock()

    def take(self) -> float:
        """0 when a token was taken; otherwise the seconds until one will be there (none taken)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.rate.burst, self._tokens + (now - self._updated) * self.rate.per_s)
            self._updated = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            return (1 - self._tokens) / self.rate.per_s
