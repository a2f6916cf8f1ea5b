"""Per-invocation metrics, as each Lambda execution environment keeps its own.

Powertools' Metrics keeps what an invocation adds (metrics, dimensions, metadata) in containers that
every Metrics instance of the process shares, and its provider empties them when it flushes. On
Lambda one environment runs one invocation at a time. Locally one process runs every function, and
the API's invocation runs beside a stage function's: one invocation's flush then wrote the other's
metrics under its own function's name, and the other's flush, finding none left after it had seen
some, raised `SchemaValidationError` (a 502 for a run that had been created). Here each of the
provider's containers holds, inside an invocation, that invocation's own contents."""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping, MutableSequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

# The invocation's own containers, by the name of the provider's attribute they stand in for.
_own: ContextVar[dict[str, Any] | None] = ContextVar("invocation_metrics", default=None)

PROVIDER_MAPPINGS = ("metric_set", "dimension_set", "metadata_set")
PROVIDER_SEQUENCES = ("dimension_sets",)


class InvocationMapping(MutableMapping[str, Any]):
    """A dictionary whose contents, inside an invocation, are that invocation's; outside one, the
    process's (what the provider held before)."""

    def __init__(self, name: str, outside: dict[str, Any]) -> None:
        self.name, self.outside = name, outside

    def _current(self) -> dict[str, Any]:
        own = _own.get()
        return self.outside if own is None else own.setdefault(self.name, {})

    def __getitem__(self, key: str) -> Any:
        return self._current()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._current()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._current()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def clear(self) -> None:
        self._current().clear()


class InvocationSequence(MutableSequence[Any]):
    """A list whose contents, inside an invocation, are that invocation's."""

    def __init__(self, name: str, outside: list[Any]) -> None:
        self.name, self.outside = name, outside

    def _current(self) -> list[Any]:
        own = _own.get()
        return self.outside if own is None else own.setdefault(self.name, [])

    def __getitem__(self, index: Any) -> Any:
        return self._current()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._current()[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._current()[index]

    def __len__(self) -> int:
        return len(self._current())

    def insert(self, index: int, value: Any) -> None:
        self._current().insert(index, value)

    def clear(self) -> None:
        self._current().clear()


def install() -> Callable[[], None]:
    """The handlers' provider keeps each invocation's metrics apart; the returned undo gives it back
    the containers it had."""
    from agentledger.handlers.telemetry import metrics  # noqa: PLC0415 — the functions' package, once it is importable

    provider = metrics.provider
    if isinstance(provider.metric_set, InvocationMapping):  # a runtime started earlier in this process did it
        return lambda: None
    before = {name: getattr(provider, name) for name in (*PROVIDER_MAPPINGS, *PROVIDER_SEQUENCES)}
    for name in PROVIDER_MAPPINGS:
        setattr(provider, name, InvocationMapping(name, before[name]))
    for name in PROVIDER_SEQUENCES:
        setattr(provider, name, InvocationSequence(name, before[name]))

    def undo() -> None:
        for name, container in before.items():
            setattr(provider, name, container)

    return undo


@contextmanager
def own_metrics() -> Iterator[None]:
    """Inside, the provider's containers are this invocation's, empty at its start."""
    token = _own.set({})
    try:
        yield
    finally:
        _own.reset(token)
