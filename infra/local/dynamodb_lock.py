"""Real DynamoDB applies conditional writes atomically; moto's backend does not across threads
(measured: concurrent conditional puts with two winners). Serializing the backend's item
operations restores the guarantee the ledger relies on, so concurrency tests fail or pass for
our reasons, not moto's."""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

# Held by every item operation of the backend; re-entrant, so a correction that must run as one
# step with an operation (moto_scale) can hold it around the operation too.
BACKEND_LOCK = threading.RLock()
_GUARDED = ("put_item", "update_item", "delete_item", "get_item", "query", "scan", "transact_write_items",
            "transact_get_items", "batch_write_item", "batch_get_item")


def _serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        with BACKEND_LOCK:
            return method(*args, **kwargs)

    guarded.__agentledger_serialized__ = True  # type: ignore[attr-defined]
    return guarded


def install() -> Callable[[], None]:
    """Serialize the backend's item operations; the returned undo puts moto's own methods back."""
    originals: dict[str, Any] = {}
    for name in _GUARDED:
        method = vars(DynamoDBBackend).get(name)
        if method is not None and not getattr(method, "__agentledger_serialized__", False):
            originals[name] = method
            setattr(DynamoDBBackend, name, _serialized(method))

    def uninstall() -> None:
        for name, method in originals.items():
            setattr(DynamoDBBackend, name, method)

    return uninstall
