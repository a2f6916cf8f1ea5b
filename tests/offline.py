"""The unit suite's guard, a pytest plugin: `pytest -p tests.offline tests/unit` (`make test-unit`).

Under it moto cannot be imported and nothing reaches the network: a socket refuses to connect
anywhere but a Unix socket, and botocore refuses to send a request. A unit test that needs
either fails, naming what it reached for, instead of quietly loading moto or calling AWS. The
unit tests run on in-memory fakes of the ports; what needs moto belongs in tests/integration."""
from __future__ import annotations

import importlib.abc
import socket
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import botocore.httpsession
import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

BLOCKED_PACKAGES = ("moto",)


class NetworkBlocked(RuntimeError):
    """Not an OSError, so no retry loop or connection-error handler takes it for a flaky network."""


class _RefuseBlockedPackages(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname.partition(".")[0] in BLOCKED_PACKAGES:
            raise ModuleNotFoundError(f"{fullname} is blocked in the unit tests (tests/offline.py): a test that "
                                      "needs moto belongs in tests/integration", name=fullname)
        return None


def _refuse_connect(sock: socket.socket, address: Any) -> NoReturn:
    raise NetworkBlocked(f"the unit tests may not connect to {address!r} (tests/offline.py)")


def _refuse_send(_session: botocore.httpsession.URLLib3Session, request: Any) -> NoReturn:
    raise NetworkBlocked(f"the unit tests may not send {request.method} {request.url} (tests/offline.py)")


def _unix_only(connect: Any) -> Any:
    def guarded(sock: socket.socket, address: Any) -> Any:
        if sock.family == socket.AF_UNIX:
            return connect(sock, address)
        return _refuse_connect(sock, address)

    return guarded


def install() -> None:
    """Block moto and the network in this interpreter, for good."""
    already = sorted(name for name in sys.modules if name.partition(".")[0] in BLOCKED_PACKAGES)
    if already:
        raise RuntimeError(f"too late to block {', '.join(already)}: already imported")
    sys.meta_path.insert(0, _RefuseBlockedPackages())
    socket.socket.connect = _unix_only(socket.socket.connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _unix_only(socket.socket.connect_ex)  # type: ignore[method-assign]
    botocore.httpsession.URLLib3Session.send = _refuse_send  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests() -> None:
    """Before any conftest is imported, so none of them can load moto first."""
    install()
