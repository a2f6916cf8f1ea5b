"""The wheel installs one name, agentledger, and is complete: every module of functions/agentledger
and infra/agentledger is in it, with the files the app, `serve` and `demo` read at run time
(agentledger/deploy/__init__.py names them), and nothing else; its `local` extra holds what serve
and demo need, and without it they say so in one line."""
from __future__ import annotations

import importlib.util
import tomllib
import zipfile
from email.parser import Parser
from typing import TYPE_CHECKING

import pytest

from agentledger import deploy
from agentledger.cli.main import main
from agentledger.deploy import HOST_ONLY_SUBPACKAGES, PROJECT_ROOT
from tests.wheel import build_wheel

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# The two folders the one package is made from: what Lambda runs, and what only a host runs.
FUNCTIONS_DIR = PROJECT_ROOT / "functions"
INFRA_DIR = PROJECT_ROOT / "infra"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    with zipfile.ZipFile(build_wheel(tmp_path_factory.mktemp("wheel"))) as archive:
        yield archive


def _modules(root: Path, relative_to: Path) -> set[str]:
    return {str(path.relative_to(relative_to)) for path in root.rglob("*.py") if "__pycache__" not in path.parts}


def _project_files() -> dict[str, Path]:
    """Each run-time file by its place in the wheel: the links of infra/agentledger/deploy/project_files, followed."""
    files = {}
    for link in (deploy.CDK_JSON_FILE, deploy.DEPENDENCIES_FILE, deploy.STATE_MACHINE_FILE):
        files[str(link.relative_to(INFRA_DIR))] = link
    for path in deploy.SAMPLE_REPOSITORY.resolve().rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            relative = path.relative_to(deploy.SAMPLE_REPOSITORY.resolve())
            files[str(deploy.SAMPLE_REPOSITORY.relative_to(INFRA_DIR) / relative)] = path
    for path in deploy.CONSOLE_STATIC_DIR.iterdir():
        files[str(path.relative_to(INFRA_DIR))] = path
    return files


def test_every_module_under_functions_and_infra_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    modules = _modules(FUNCTIONS_DIR, FUNCTIONS_DIR) | _modules(INFRA_DIR, INFRA_DIR)

    assert len(modules) > 90
    assert sorted(modules - names) == []
    assert {"agentledger/workflow/__init__.py", "agentledger/buildkit/driver.py"} <= names  # once left out
    assert {"agentledger/handlers/api.py", "agentledger/cli/main.py", "agentledger/testing/world.py"} <= names


def test_what_infra_adds_to_the_package_is_what_the_lambda_asset_leaves_out_and_what_setuptools_maps() -> None:
    added = sorted(entry.name for entry in (INFRA_DIR / "agentledger").iterdir() if entry.name != "__pycache__")
    mapped = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

    assert added == sorted(HOST_ONLY_SUBPACKAGES)
    assert mapped == {f"agentledger.{name}": f"infra/agentledger/{name}" for name in HOST_ONLY_SUBPACKAGES}
    assert not [name for name in HOST_ONLY_SUBPACKAGES if (FUNCTIONS_DIR / "agentledger" / name).exists()]


def test_the_files_read_at_run_time_are_in_the_wheel_as_they_are_in_the_checkout(wheel: zipfile.ZipFile) -> None:
    files = _project_files()

    assert {"agentledger/deploy/project_files/cdk.json", "agentledger/deploy/project_files/statemachines/run.asl.json",
            "agentledger/deploy/project_files/samples/textkit/textkit/slug.py",
            "agentledger/local/console_static/app.js"} <= set(files)
    for name, path in files.items():
        assert wheel.read(name) == path.read_bytes(), name


def test_the_wheel_installs_one_name_and_nothing_but_its_modules_and_files(wheel: zipfile.ZipFile) -> None:
    shipped = {name.split("/")[0] for name in wheel.namelist() if not name.split("/")[0].endswith(".dist-info")}
    python = {name for name in wheel.namelist() if name.endswith(".py")}
    data = {name for name in wheel.namelist() if not name.endswith(".py") and ".dist-info/" not in name}

    assert shipped == {"agentledger"}
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in wheel.namelist())
    project_files = {name for name in python if name.startswith("agentledger/deploy/project_files/")}
    assert data | project_files == set(_project_files())
    entry_points = wheel.read("agentledger-0.1.0.dist-info/entry_points.txt").decode()
    assert "agentledger = agentledger.cli.main:main" in entry_points


def test_the_local_extra_holds_moto_and_the_cdk(wheel: zipfile.ZipFile) -> None:
    metadata = Parser().parsestr(wheel.read("agentledger-0.1.0.dist-info/METADATA").decode())
    local = {requirement.split(";")[0].split("==")[0].split("[")[0].strip()
             for requirement in metadata.get_all("Requires-Dist") or [] if 'extra == "local"' in requirement}

    assert "local" in (metadata.get_all("Provides-Extra") or [])
    assert local == {"moto", "aws-cdk-lib", "constructs", "cdk-nag"}


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_without_the_local_extra_serve_and_demo_name_it_in_one_line(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name in ("moto", "aws_cdk") else find_spec(name, *rest))

    exit_code = main([command])

    out, err = capsys.readouterr()
    assert (exit_code, out) == (1, "")
    assert err == (f"agentledger: {command} needs the local extra, which holds moto, aws_cdk: "
                   "pip install 'agentledger[local]'\n")
