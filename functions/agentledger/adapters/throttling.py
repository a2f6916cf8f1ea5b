"""Throttling by AWS: how the functions' clients retry it, and how each throttle is made visible.

A throttle is a transient failure: the service refused the call before doing anything. Every
client retries it in botocore's standard mode, with exponential backoff and full jitter, a
bounded number of times, well inside the functions' timeouts; what outlasts those retries fails
the stage, and the state machine's Retry takes it from there. Each throttle answer is reported,
retried or not, so a quota that starts to bind shows before it costs a run."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.config import Config

from ..errors import TransientError

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

# Four attempts: waits of at most 1, 2 and 4 s between them (botocore's standard backoff), so a
# call gives up within about 7 s, inside the shortest function timeout with time left to record it.
MAX_ATTEMPTS = 4
RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS})
# What AWS answers when a quota binds: botocore's standard mode retries all but the last, which
# CodeBuild gives at its concurrent-build limit and is the caller's to wait out (workflow/builds.py).
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "LimitExceededException", "SlowDown", "AccountLimitExceededException",
})

OnThrottle = Callable[[str, str, str], None]  # (service, operation, error code)


def report_throttles(client: Any, on_throttle: OnThrottle) -> Any:
    """Call `on_throttle` for every throttle answer the client receives, retried or not; the client."""
    service = client.meta.service_model.service_id.hyphenize()

    def after_attempt(response: tuple[Any, dict[str, Any]] | None = None, operation: Any = None,
                      **_: Any) -> None:
        code = (response[1].get("Error") or {}).get("Code") if response is not None else None
        if code in THROTTLING_CODES:
            on_throttle(service, operation.name, code)

    client.meta.events.register(f"needs-retry.{service}", after_attempt)
    return client


def as_transient(error: ClientError) -> TransientError | None:
    """A throttle that outlasted the client's retries, as the error the state machine retries with
    its own backoff (and the restart policy calls retryable); None for any other error, which is
    no throttle and is left as it is."""
    code = error.response.get("Error", {}).get("Code")
    if code not in THROTTLING_CODES:
        return None
    return TransientError(f"{error.operation_name} was still refused with {code} after the client's "
                          f"{MAX_ATTEMPTS} attempts: a quota binds; retry later")
