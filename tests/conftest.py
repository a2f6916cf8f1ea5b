"""What every kind of test shares: its kind, named by its folder, and the local-stack fixtures,
which load moto only when an integration or reliability test asks for them."""
from __future__ import annotations

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
# Each folder is a kind of test and a marker (pyproject.toml describes them): `-m unit` selects
# exactly tests/unit.
KINDS = ("unit", "integration", "infra", "reliability", "e2e")

pytest_plugins = ("tests.integration.local_stack",)


# `make test` hands each worker whole modules (`--dist loadfile`), so that a module's shared runs
# and serve start once. (xdist's groups cannot do it: xdist 3.8 names an item's group in its node id,
# which pytest 9 no longer reads, so every group was ignored.) Modules go in the order collected
# (`--no-loadscope-reorder`): the longest (minutes each) first, so that no worker is left running
# one of them alone at the end while the other has finished.
LONGEST_FIRST = ("reliability/test_crash_matrix.py", "reliability/test_effects.py", "e2e/test_local_api.py",
                 "e2e/test_installed_wheel.py", "e2e/test_generation.py", "e2e/test_console.py",
                 "integration/test_build_sandbox.py", "e2e/test_delivery.py", "reliability/test_throttling.py",
                 "reliability/test_build_events.py", "reliability/test_stale_context.py",
                 "integration/test_run_lifecycle.py", "e2e/test_side_by_side_serves.py",
                 "integration/test_wiring_mistakes.py", "e2e/test_hostile_repository.py",
                 "e2e/test_concurrent_runs.py", "integration/test_runtime_restores.py",
                 "integration/test_api_contract.py")


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
