"""Fixtures shared by every kind of test."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.local.runtime import LocalRuntime
from tests import counting_agent
from tests.samples import write_sample_repository
from tests.stack_driver import Driver


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    return write_sample_repository(tmp_path / "sample-repo")


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    """One local stack per test worker; runs are independent, so tests share it."""
    # The agent is chosen as a user chooses it: the `agent` context key of the synthesized stack.
    local = LocalRuntime(workspace_root=tmp_path_factory.mktemp("workspaces"),
                         context={"agent": counting_agent.SPEC}).start()
    yield local
    local.stop()


@pytest.fixture
def driver(runtime: LocalRuntime) -> Driver:
    return Driver(runtime)
