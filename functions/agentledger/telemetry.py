"""Where the workflow reports its metrics; the handlers plug in Powertools Metrics (EMF)."""
from __future__ import annotations

from typing import Protocol


class MetricSink(Protocol):
    def count(self, name: str, value: float = 1) -> None: ...

    def seconds(self, name: str, value: float, stage: str | None = None) -> None: ...


class NullSink:
    def count(self, name: str, value: float = 1) -> None:
        return None

    def seconds(self, name: str, value: float, stage: str | None = None) -> None:
        return None
