"""The layer is the folder: the core of `agentledger` imports no AWS SDK and no adapter, what Lambda
runs (functions/agentledger) imports nothing only a host has (infra/agentledger), the testing kit
stands in for the adapters without borrowing their internals, and the local runtime never reaches
into the CLI that drives it."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentledger.deploy import HOST_ONLY_SUBPACKAGES

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "functions" / "agentledger"
ADAPTERS = LIBRARY / "adapters"
HANDLERS = LIBRARY / "handlers"  # the composition root: they build the adapters
HOST = ROOT / "infra" / "agentledger"
AWS_SDKS = ("boto3", "botocore", "mypy_boto3", "aiobotocore", "agentledger.adapters")


def _module_name(path: Path) -> str:
    root = next((ROOT / folder for folder in ("functions", "infra") if path.is_relative_to(ROOT / folder)), ROOT)
    parts = path.relative_to(root)
    return ".".join(parts.with_suffix("").parts).removesuffix(".__init__")


def imports_of(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """Every module `source` (the text of `path`) imports, relative imports resolved, with its line."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield node.lineno, module
            for alias in node.names:  # `from . import adapters` names a module too
                yield node.lineno, f"{module}.{alias.name}"


def findings(path: Path, source: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for line, module in imports_of(path, source)
        if any(module == name or module.startswith(name + ".") for name in forbidden)
    ]


def offending(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [finding for path in paths for finding in findings(path, path.read_text(), forbidden)]


def core_modules() -> list[Path]:
    return sorted(p for p in LIBRARY.rglob("*.py") if not (p.is_relative_to(ADAPTERS) or p.is_relative_to(HANDLERS)))


def test_the_core_imports_no_aws_sdk_and_no_adapter() -> None:
    assert len(core_modules()) > 20
    assert offending(core_modules(), AWS_SDKS) == []


def test_every_module_that_imports_an_aws_sdk_is_an_adapter_or_a_handler_building_one() -> None:
    sdk_users = {p for p in LIBRARY.rglob("*.py") if offending([p], AWS_SDKS[:-1])}
    assert sdk_users, "the adapters import boto3 or botocore"
    assert [p for p in sdk_users if not (p.is_relative_to(ADAPTERS) or p.is_relative_to(HANDLERS))] == []


def test_what_lambda_runs_imports_nothing_only_a_host_has() -> None:
    host_only = tuple(f"agentledger.{name}" for name in HOST_ONLY_SUBPACKAGES)
    assert offending(sorted(LIBRARY.rglob("*.py")), host_only) == []


def test_the_testing_kit_stands_in_for_the_adapters_without_importing_them() -> None:
    kit = sorted((HOST / "testing").rglob("*.py"))
    assert kit
    assert offending(kit, AWS_SDKS) == []


def test_the_local_runtime_never_imports_the_cli() -> None:
    local = sorted((HOST / "local").rglob("*.py"))
    assert offending(local, ("agentledger.cli",)) == []


@pytest.mark.parametrize("source, forbidden", [
    ("import boto3\n", "boto3"),
    ("from botocore.exceptions import ClientError\n", "botocore.exceptions"),
    ("from .. import adapters\n", "agentledger.adapters"),
    ("from ..adapters.s3_artifacts import ArtifactStore\n", "agentledger.adapters.s3_artifacts"),
])
def test_the_guard_sees_each_way_a_module_can_import(source: str, forbidden: str) -> None:
    found = findings(LIBRARY / "workflow" / "probe.py", source, AWS_SDKS)
    assert found and all(forbidden in finding for finding in found)
