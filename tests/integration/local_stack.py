"""The fixtures that start the local runtime (moto + the synthesized stack + the real handlers),
for the integration and reliability tests. The root conftest registers this module, so one
stack per test worker serves both folders; moto is imported only when a test asks for it, never
while the unit tests are collected."""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.samples import write_sample_repository

if TYPE_CHECKING:
    from infra.local.runtime import LocalRuntime
    from tests.stack_driver import Driver


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    return write_sample_repository(tmp_path / "sample-repo")


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    """One local stack per test worker; runs are independent, so tests share it."""
    from infra.local.runtime import LocalRuntime  # noqa: PLC0415 — loads moto
    from tests import counting_agent  # noqa: PLC0415

    # The agent is chosen as a user chooses it: the `agent` context key of the synthesized stack.
    # The tests' repositories lie under the temporary directory, which they allow as `--allow-root` would.
    local = LocalRuntime(workspace_root=tmp_path_factory.mktemp("workspaces"),
                         repository_roots=(Path(tempfile.gettempdir()),),
                         context={"agent": counting_agent.SPEC}).start()
    yield local
    local.stop()


@pytest.fixture
def driver(runtime: LocalRuntime) -> Driver:
    from tests.stack_driver import Driver  # noqa: PLC0415 — loads moto

    return Driver(runtime)
