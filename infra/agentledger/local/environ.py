"""Per-invocation process environments for handlers that share one Python process.

On AWS each function sees only its own configuration. Locally several functions run at once in
threads of one process, so `os.environ` is replaced by a mapping that, inside an invocation,
shows that function's environment alone: a variable the stack forgot to pass is missing here
exactly as it would be on Lambda."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar

_invocation_env: ContextVar[dict[str, str] | None] = ContextVar("lambda_invocation_env", default=None)

# What a Lambda sandbox has besides the function's own variables; the rest of this machine's
# environment stays outside.
SANDBOX_VARIABLES = ("PATH", "HOME", "LANG", "TZ", "TMPDIR", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                     "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION", "SYSTEMROOT", "VIRTUAL_ENV")


class InvocationEnviron(MutableMapping[str, str]):
    def __init__(self, process_env: MutableMapping[str, str]) -> None:
        self.process_env = process_env

    def _view(self) -> MutableMapping[str, str]:
        overlay = _invocation_env.get()
        return self.process_env if overlay is None else overlay

    def __getitem__(self, key: str) -> str:
        return self._view()[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._view()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._view()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._view()))

    def __len__(self) -> int:
        return len(self._view())

    def copy(self) -> dict[str, str]:
        return dict(self._view())


def install() -> Callable[[], None]:
    """Replace `os.environ`; the returned undo puts the process environment back."""
    if isinstance(os.environ, InvocationEnviron):
        return lambda: None
    invocation_environ = InvocationEnviron(os.environ)
    # Replacing the mapping, not its contents, is the point: each invocation sees its own environment.
    os.environ = invocation_environ  # type: ignore[assignment]  # noqa: B003

    def uninstall() -> None:
        if os.environ is invocation_environ:
            os.environ = invocation_environ.process_env  # type: ignore[assignment]  # noqa: B003

    return uninstall


@contextmanager
def lambda_environment(variables: dict[str, str]) -> Iterator[None]:
    install()
    process_env = os.environ.process_env if isinstance(os.environ, InvocationEnviron) else os.environ
    sandbox = {name: process_env[name] for name in SANDBOX_VARIABLES if name in process_env}
    token = _invocation_env.set({**sandbox, **variables})
    try:
        yield
    finally:
        _invocation_env.reset(token)
