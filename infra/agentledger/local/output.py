"""Per-invocation stdout and stderr, as Lambda sends a function's output to its log group.

Handlers print structured logs and EMF metrics to stdout. Locally many invocations share one
process, so sys.stdout is replaced by a stream that, inside an invocation, collects that
invocation's lines; outside one it writes to the real terminal."""
from __future__ import annotations

import io
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

_buffer: ContextVar[io.StringIO | None] = ContextVar("lambda_stdout", default=None)


class InvocationStream(io.TextIOBase):
    def __init__(self, terminal: TextIO) -> None:
        self.terminal = terminal

    def write(self, text: str) -> int:
        buffer = _buffer.get()
        return (buffer or self.terminal).write(text)

    def flush(self) -> None:
        if _buffer.get() is None:
            self.terminal.flush()

    def isatty(self) -> bool:
        return self.terminal.isatty()

    # typeshed declares TextIOBase.encoding a plain attribute; io's own is a read-only property, as here.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.terminal, "encoding", "utf-8")


_STREAMS = ("stdout", "stderr")


def wrap_streams() -> None:
    """Put an invocation stream in front of sys.stdout and sys.stderr, unless one is there."""
    for name in _STREAMS:
        stream = getattr(sys, name)
        if not isinstance(stream, InvocationStream):
            setattr(sys, name, InvocationStream(stream))


def unwrap_streams() -> None:
    """Put back the stream each invocation stream stands in front of; a stream someone swapped in
    since (a test runner's capture) stays, only our wrapper around it goes."""
    for name in _STREAMS:
        stream = getattr(sys, name)
        if isinstance(stream, InvocationStream):
            setattr(sys, name, stream.terminal)


def install() -> Callable[[], None]:
    wrap_streams()
    return unwrap_streams


@contextmanager
def captured() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    token = _buffer.set(buffer)
    try:
        yield buffer
    finally:
        _buffer.reset(token)
