"""What every kind of test shares: its kind, named by its folder, and the local-stack fixtures,
which load moto only when an integration or reliability test asks for them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
# Each folder is a kind of test and a marker (pyproject.toml describes them): `-m unit` selects
# exactly tests/unit.
KINDS = ("unit", "integration", "infra", "reliability", "e2e")

pytest_plugins = ("tests.integration.local_stack",)


# `make test` hands each worker whole modules (`--dist loadfile`), so that a module's shared runs
# and serve start once. (xdist's groups cannot do it: xdist 3.8 names an item's group in its node id,
# which pytest 9 no longer reads, so every group was ignored.) Modules go in the order collected
# (`--no-loadscope-reorder`): the longest first, as measured at the last profile of the suite (the
# seconds its tests took in all), so that no worker is left running one of them alone at the end.
LONGEST_FIRST = ("e2e/test_installed_wheel.py",  # 203 s
                 "e2e/test_local_api.py",  # 165 s
                 "e2e/test_hostile_repository.py",  # 123 s
                 "e2e/test_generation.py",  # 158 s and 97 s, a test to a worker
                 "e2e/test_console.py",  # 96 s
                 "e2e/test_concurrent_runs.py",  # 86 s
                 "e2e/test_side_by_side_serves.py",  # 51 s
                 "e2e/test_delivery.py",  # 46 s
                 "integration/test_run_lifecycle.py",  # 45 s
                 "e2e/test_git_source.py",  # 43 s
                 "e2e/test_api_schema.py",  # 37 s
                 "integration/test_wiring_mistakes.py",  # 30 s
                 "integration/test_api_contract.py",  # 27 s
                 "e2e/test_bidi.py",  # 20 s
                 # Each of these tests is a unit of its own (SHARING_NOTHING_BUT_THE_WORKERS_STACK):
                 # the longest of them take under a minute.
                 "reliability/test_effects.py", "reliability/test_crash_matrix.py",
                 "integration/test_build_sandbox.py", "reliability/test_stale_context.py",
                 "reliability/test_throttling.py", "reliability/test_build_events.py")
# Modules whose tests share nothing but the worker's one local stack (the session's `runtime`): xdist
# may hand their tests to different workers one by one. Whole, the effects module alone (five
# minutes) was longer than a quarter of the suite.
SHARING_NOTHING_BUT_THE_WORKERS_STACK = ("reliability/", "integration/test_build_sandbox.py",
                                         "e2e/test_generation.py")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, except that the tests of SHARING_NOTHING_BUT_THE_WORKERS_STACK are each a
    unit of work of their own."""
    from xdist.scheduler import LoadFileScheduling  # noqa: PLC0415 — only under `-n`

    shared = tuple(f"tests/{name}" for name in SHARING_NOTHING_BUT_THE_WORKERS_STACK)

    class ModulesOrSingleTests(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(shared) else super()._split_scope(nodeid)

    return ModulesOrSingleTests(config, log) if config.getoption("dist") == "loadfile" else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(TESTS_DIR) and (kind := item.path.relative_to(TESTS_DIR).parts[0]) in KINDS:
            item.add_marker(kind)
    longest = {TESTS_DIR / name: rank for rank, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: longest.get(item.path, len(longest)))  # stable: the rest keep their order


@pytest.fixture
def profiles_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The credentials directory a user named for `serve`'s profiles, and no other AWS settings
    that could sign a request."""
    for variable in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
                     "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AGENTLEDGER_LOCAL_CREDENTIALS_DIR", str(tmp_path))
    return tmp_path
