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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(TESTS_DIR) and (kind := item.path.relative_to(TESTS_DIR).parts[0]) in KINDS:
            item.add_marker(kind)
