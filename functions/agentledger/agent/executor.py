"""What was done: planned tests rendered into a copy of the repository, and the diff they make."""

from __future__ import annotations

import difflib
import os
import shutil
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentledger.agent.inventory import module_import_path
from agentledger.agent.planner import GENERATED_TESTS_DIR, Plan, PlanItem
from agentledger.source import SourceSnapshot, is_safe_relative_path

PACKAGE_MARKER = f"{GENERATED_TESTS_DIR}/__init__.py"
CONFTEST = f"{GENERATED_TESTS_DIR}/conftest.py"

# Written once per run: the one place that knows how a test's examples are run. The standard
# library's doctest parses them, honours their directives and the project's option flags, and runs
# them in a fresh copy of the tested object's module globals.
_CONFTEST_TEMPLATE = '''\
"""Runs the examples of the tests agentledger wrote, with the standard library's doctest."""

import doctest
import inspect
import textwrap

import pytest

# The project's doctest_optionflags, as pytest would apply them to a doctest run.
OPTION_FLAGS = {option_flags}


@pytest.fixture
def docstring_examples():
    """Run `examples` (doctest text) against `obj`, in a fresh copy of its module's globals, and fail
    on any mismatch; doctest's report of what differed is printed, so pytest shows it."""

    def run(obj, examples):
        module = inspect.getmodule(obj)
        name = obj.__name__ if inspect.ismodule(obj) else f"{{module.__name__}}.{{obj.__qualname__}}"
        test = doctest.DocTestParser().get_doctest(textwrap.dedent(examples), dict(vars(module)), name,
                                                    getattr(module, "__file__", None), 0)
        result = doctest.DocTestRunner(optionflags=OPTION_FLAGS).run(test)
        assert result.failed == 0, f"{{result.failed}} of {{result.attempted}} examples of {{name}} failed"

    return run
'''

_TEST_MODULE_TEMPLATE = '''\
"""Tests agentledger wrote from the docstring examples of {module_path}."""

import {module}
{tests}'''

_TEST_TEMPLATE = '''

def {test_name}(docstring_examples):
    docstring_examples({reference}, {examples})
'''
EXAMPLE_INDENT = " " * 8


class Execution(BaseModel):
    model_config = ConfigDict(frozen=True)

    files: dict[str, str]  # path -> content of every file written into the workspace
    diff: str


def write_tests(plan: Plan, snapshot: SourceSnapshot, workspace: str | os.PathLike[str]) -> Execution:
    files = render_test_files(plan)
    apply_files(files, snapshot, workspace)
    return Execution(files=files, diff=diff_against_source(files, snapshot))


def render_test_files(plan: Plan) -> dict[str, str]:
    items_by_path: dict[str, list[PlanItem]] = defaultdict(list)
    for item in plan.items:
        items_by_path[item.test_path].append(item)
    flags = " | ".join(f"doctest.{flag}" for flag in plan.option_flags) or "0"
    files = {PACKAGE_MARKER: '"""Tests written by agentledger."""\n',
             CONFTEST: _CONFTEST_TEMPLATE.format(option_flags=flags)}
    files.update({path: _render_test_module(items) for path, items in sorted(items_by_path.items())})
    return files


def apply_files(files: dict[str, str], snapshot: SourceSnapshot, workspace: str | os.PathLike[str]) -> Path:
    """(Re)create `workspace` as the snapshot's files plus `files`; safe to repeat after a failed
    attempt. Exactly the snapshot's files: in a git work tree, what git ignores stays out."""
    unsafe = sorted(path for path in files if not is_safe_relative_path(path))
    if unsafe:
        raise ValueError(f"generated file paths escape the workspace: {unsafe}")
    workspace = Path(workspace)
    if workspace.exists():
        shutil.rmtree(workspace)
    created: set[str] = set()
    for relative in snapshot.files:
        directory = os.path.join(workspace, os.path.dirname(relative))
        if directory not in created:
            os.makedirs(directory, exist_ok=True)
            created.add(directory)
        shutil.copy(os.path.join(snapshot.root, relative), os.path.join(workspace, relative))
    for path, content in files.items():
        target = workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    return workspace


def diff_against_source(files: dict[str, str], snapshot: SourceSnapshot) -> str:
    chunks: list[str] = []
    for path in sorted(files):
        original = snapshot.root / path
        exists = original.is_file()
        before = original.read_text(encoding="utf-8").splitlines(keepends=True) if exists else []
        chunks.extend(
            difflib.unified_diff(
                before,
                files[path].splitlines(keepends=True),
                fromfile=f"a/{path}" if exists else "/dev/null",
                tofile=f"b/{path}",
            )
        )
    return "".join(chunks)


def _render_test_module(items: list[PlanItem]) -> str:
    module = module_import_path(items[0].module_path)
    tests = "".join(_TEST_TEMPLATE.format(test_name=item.test_name,
                                          reference=f"{module}.{item.qualname}" if item.qualname else module,
                                          examples=_examples_literal(item))
                    for item in items)
    return _TEST_MODULE_TEMPLATE.format(module_path=items[0].module_path, module=module, tests=tests)


def _examples_literal(item: PlanItem) -> str:
    """The item's examples as doctest text in a Python literal: raw and triple-quoted, as a reviewer
    reads a docstring, unless the text cannot be written so."""
    lines: list[str] = []
    for example in item.examples:
        first, *rest = example.source.split("\n")
        lines += [f">>> {first}", *(f"... {line}" for line in rest)]
        lines += example.expected.split("\n") if example.expected else []
    text = "\n".join(f"{EXAMPLE_INDENT}{line}" if line else "" for line in lines)
    if "'''" in text or text.endswith("\\"):
        return repr("\n".join(lines) + "\n")
    return f"r'''\n{text}\n    '''"

