"""Real DynamoDB applies conditional writes atomically; moto's backend does not across threads
(measured: concurrent conditional puts with two winners). Serializing the backend's item
operations (moto_seams names them) restores the guarantee the ledger relies on, so concurrency
tests fail or pass for our reasons, not moto's."""
from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

# Held by every item operation of the backend; re-entrant, so a correction that must run as one
# step with an operation (moto_scale) can hold it around the operation too.
BACKEND_LOCK = threading.RLock()


def serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, run holding the backend's lock."""
    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        with BACKEND_LOCK:
            return method(*args, **kwargs)

    return guarded
