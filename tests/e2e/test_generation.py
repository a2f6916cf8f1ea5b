"""Pynguin through `agentledger serve`, as a user runs it: a module with no docstring examples gets
generated tests that pass the filters and add coverage, they go into the project's tests folder,
and the project, with them in, still installs: on a flat layout whose pyproject.toml has only
[project], and on a src layout."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from .conftest import REVIEWER, CliResult

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.e2e

SHAPES = '''\
"""Rectangles, and the sign of a number."""


class Rect:
    def __init__(self, width: float, height: float) -> None:
        if width < 0 or height < 0:
            raise ValueError("a side cannot be negative")
        self.width, self.height = width, height

    def area(self) -> float:
        return self.width * self.height

    def scaled(self, factor: float) -> "Rect":
        return Rect(self.width * factor, self.height * factor)


def sign(number: float) -> str:
    if number < 0:
        return "negative"
    if number == 0:
        return "zero"
    return "positive"
'''
# The repository asks for Pynguin (the session's `serve` writes docstring examples) and lowers the
# search budget, as a small project would.
PROJECT = '''\
[project]
name = "shapes"
version = "0.1.0"
requires-python = ">=3.9"

[tool.agentledger]
writer = "pynguin"
generation_module_seconds = 20
'''


def _flat(root: Path) -> Path:
    """The layout a new top-level test package broke: setuptools then found two packages."""
    (root / "shapes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PROJECT)
    (root / "shapes" / "__init__.py").write_text(SHAPES)
    return root


def _src(root: Path) -> Path:
    (root / "src" / "shapes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        PROJECT + '\n[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n')
    (root / "src" / "shapes" / "__init__.py").write_text(SHAPES)
    return root


@pytest.mark.parametrize(("layout", "make", "module_path"), [
    ("flat", _flat, "shapes/__init__.py"), ("src", _src, "src/shapes/__init__.py")])
def test_pynguin_writes_kept_tests_that_add_coverage_where_the_project_keeps_them(
        cli: Callable[..., CliResult], tmp_path: Path, layout: str, make: Callable[[Path], Path],
        module_path: str) -> None:
    repository = make(tmp_path / layout)
    waiting = cli("run", str(repository), "--wait", "--request", "write tests for shapes").json()
    assert waiting["run"]["status"] == "awaiting_review", waiting.get("handoff")
    generation = waiting["summary"]["generation"]
    assert generation["writer"] == "pynguin"
    assert 1 <= generation["kept"] <= generation["generated"]
    assert generation["coverage_gained"] > 0
    [coverage] = [line for line in generation["coverage"] if line.startswith(f"{module_path}: ")]
    assert "lines 0%" in coverage.split("→")[0]  # no test touched it before
    assert [f["path"] for f in waiting["summary"]["files_changed"]] == ["tests/test_shapes_generated.py"]
    assert waiting["summary"]["tests"]["outcome"] == "passed"  # verify installed the project with them in

    # The reviewer reads the value first: kept of generated, then coverage, then findings, then the diff.
    run_id = waiting["run"]["run_id"]
    review = cli("review", run_id).stdout
    assert review.index(" kept of ") < review.index("covers ") < review.index("Diff")
    decided = cli("review", run_id, "--approve", "--profile", REVIEWER).json()
    assert decided["decision"] == "approve"

    # The project's own tooling takes the change: its install, and its test runner on its tests folder.
    written = _applied(cli, run_id, repository)
    assert written == ["tests/test_shapes_generated.py"]
    assert not (repository / "tests" / "__init__.py").exists()  # a plain test module, no package
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(repository)],
                               capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr  # setuptools' discovery still finds one layout
    source = repository / "src" if layout == "src" else repository
    suite = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=repository, capture_output=True, text=True, timeout=300, check=False,
                           env={**os.environ, "PYTHONPATH": str(source)})
    assert suite.returncode == 0, suite.stdout


def _applied(cli: Callable[..., CliResult], run_id: str, repository: Path) -> list[str]:
    """Waits for the approved run to complete, then writes its change into the working tree."""
    deadline = time.monotonic() + 120
    while cli("show", run_id).json()["run"]["status"] != "complete":
        assert time.monotonic() < deadline, "the approved run did not complete"
        time.sleep(1)
    return cli("apply", run_id, str(repository)).json()["written"]
