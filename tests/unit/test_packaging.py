"""The wheel is complete: every module under functions/ and infra/ is in it, with the files the
app, `serve` and `demo` read at run time (infra/__init__.py names them), and nothing else; its
`local` extra holds what serve and demo need, and without it they say so in one line."""
from __future__ import annotations

import importlib.util
import zipfile
from email.parser import Parser
from typing import TYPE_CHECKING

import pytest

import infra
from infra import PROJECT_ROOT
from infra.cli.main import main
from tests.wheel import build_wheel

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

FUNCTIONS_DIR = PROJECT_ROOT / "functions"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    with zipfile.ZipFile(build_wheel(tmp_path_factory.mktemp("wheel"))) as archive:
        yield archive


def _modules(root: Path, relative_to: Path) -> set[str]:
    return {str(path.relative_to(relative_to)) for path in root.rglob("*.py") if "__pycache__" not in path.parts}


def _project_files() -> dict[str, Path]:
    """Each run-time file by its place in the wheel: the links of infra/project_files, followed."""
    files = {}
    for link in (infra.CDK_JSON_FILE, infra.DEPENDENCIES_FILE, infra.STATE_MACHINE_FILE):
        files[str(link.relative_to(PROJECT_ROOT))] = link
    for path in infra.SAMPLE_REPOSITORY.resolve().rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            relative = path.relative_to(infra.SAMPLE_REPOSITORY.resolve())
            files[str(infra.SAMPLE_REPOSITORY.relative_to(PROJECT_ROOT) / relative)] = path
    for path in infra.CONSOLE_STATIC_DIR.iterdir():
        files[str(path.relative_to(PROJECT_ROOT))] = path
    return files


def test_every_module_under_functions_and_infra_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    modules = _modules(FUNCTIONS_DIR, FUNCTIONS_DIR) | _modules(PROJECT_ROOT / "infra", PROJECT_ROOT)

    assert len(modules) > 90
    assert sorted(modules - names) == []
    assert {"agentledger/workflow/__init__.py", "agentledger/buildkit/driver.py"} <= names  # once left out


def test_the_files_read_at_run_time_are_in_the_wheel_as_they_are_in_the_checkout(wheel: zipfile.ZipFile) -> None:
    files = _project_files()

    assert {"infra/project_files/cdk.json", "infra/project_files/statemachines/run.asl.json",
            "infra/project_files/samples/textkit/textkit/slug.py", "infra/local/console_static/app.js"} <= set(files)
    for name, path in files.items():
        assert wheel.read(name) == path.read_bytes(), name


def test_the_wheel_holds_nothing_but_the_packages_and_their_files(wheel: zipfile.ZipFile) -> None:
    shipped = {name.split("/")[0] for name in wheel.namelist() if not name.split("/")[0].endswith(".dist-info")}
    python = {name for name in wheel.namelist() if name.endswith(".py")}
    data = {name for name in wheel.namelist() if not name.endswith(".py") and ".dist-info/" not in name}

    assert shipped == {"agentledger", "handlers", "infra"}
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in wheel.namelist())
    assert data | {name for name in python if name.startswith("infra/project_files/")} == set(_project_files())


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
