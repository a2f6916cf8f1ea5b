"""One bounded, thread-safe, most-recently-used cache for values keyed by what pins their content
(a clean commit, a tarball's or a file's digest), so they never go stale, only out of room.
Thread-safe because `serve` runs many functions in one process."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


class ContentCache(Generic[Key, Value]):
    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._values: OrderedDict[Key, Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Key) -> Value | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def put(self, key: Key, value: Value) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self._capacity:
                self._values.popitem(last=False)
