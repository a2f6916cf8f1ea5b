"""The fixtures that start the local runtime (moto + the synthesized stack + the real handlers),
for the integration and reliability tests. The root conftest registers this module, so one
stack per test worker serves both folders; moto is imported only when a test asks for it, never
while the unit tests are collected."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.samples import write_sample_repository

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentledger.local.runtime import LocalRuntime
    from tests.stack_driver import Driver

# The worker's local stack, once a test has started it.
_started: list[LocalRuntime] = []


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """The sample without its packaging: the durable layer's properties need a real build, not a
    project installed into a venv of its own in every test (tests/e2e and the bench install it)."""
    return write_sample_repository(tmp_path / "sample-repo", packaged=False)


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    """One local stack per test worker; runs are independent, so tests share it."""
    from agentledger.local.runtime import LocalRuntime  # noqa: PLC0415 — loads moto
    from tests import counting_agent  # noqa: PLC0415

    # The agent is chosen as a user chooses it: the `agent` context key of the synthesized stack.
    # The tests' repositories lie under the temporary directory, which they allow as `--allow-root` would.
    # A candidate passes two runs in a row, not five: the filters' counting is the unit tests'
    # (tests/unit/buildkit/test_generation.py); here the durable layer needs a real build of them.
    local = LocalRuntime(workspace_root=tmp_path_factory.mktemp("workspaces"),
                         repository_roots=(Path(tempfile.gettempdir()),),
                         context={"agent": counting_agent.SPEC, "generationRuns": "2"}).start()
    _started.append(local)
    yield local
    _started.remove(local)
    local.stop()


@pytest.fixture(autouse=True)
def _stack_settings_kept() -> Iterator[None]:
    """A test that leaves moto's settings other than the stack's (a moto mock of its own, nested
    in the stack's, does) stops every later run of the worker: Step Functions no longer runs the
    state machine. That test fails here, by name, instead of the runs after it."""
    yield
    if _started:
        from moto.core.config import default_user_config  # noqa: PLC0415 — only once the stack loaded moto

        assert default_user_config["stepfunctions"]["execute_state_machine"], \
            "this test turned off moto's Step Functions execution for the worker's local stack"


@pytest.fixture
def driver(runtime: LocalRuntime) -> Driver:
    from tests.stack_driver import Driver  # noqa: PLC0415 — loads moto

    return Driver(runtime)
