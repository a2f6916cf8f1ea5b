"""What was written: the plan's candidate tests rendered into test modules (the doctest and
bedrock writers; Pynguin writes its own in the build), and the diff a set of test files makes.

Each module stands alone, in the project's tests folder: no package, no conftest of agentledger's."""

from __future__ import annotations

import difflib
import shutil
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agentledger.agent.inventory import module_import_path
from agentledger.source import SourceSnapshot, is_safe_relative_path

if TYPE_CHECKING:
    import os

    from agentledger.agent.planner import Plan, PlanItem

# The one place that knows how a test's examples are run: the standard library's doctest parses
# them, honours their directives and the project's option flags, and runs them in a fresh copy of
# the tested object's module globals. Written into each module, so each stands alone.
_DOCTEST_MODULE_TEMPLATE = '''\
"""Tests agentledger wrote from the docstring examples of {module_path}."""

import doctest
import inspect
import textwrap

import {module}

# The project's doctest_optionflags, as pytest would apply them to a doctest run.
OPTION_FLAGS = {option_flags}


def run_examples(obj, examples):
    """Run `examples` (doctest text) against `obj` in a fresh copy of its module's globals, and fail
    on any mismatch; doctest's report of what differed is printed, so pytest shows it."""
    module = inspect.getmodule(obj)
    name = obj.__name__ if inspect.ismodule(obj) else f"{{module.__name__}}.{{obj.__qualname__}}"
    test = doctest.DocTestParser().get_doctest(textwrap.dedent(examples), dict(vars(module)), name,
                                                getattr(module, "__file__", None), 0)
    result = doctest.DocTestRunner(optionflags=OPTION_FLAGS).run(test)
    assert result.failed == 0, f"{{result.failed}} of {{result.attempted}} examples of {{name}} failed"
{tests}'''

_TEST_TEMPLATE = '''

def {test_name}():
    run_examples({reference}, {examples})
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
    """The candidate test modules the plan's items make: a model's module as written, examples run
    with doctest. A Pynguin plan has none: Pynguin writes them in the build."""
    items_by_path: dict[str, list[PlanItem]] = defaultdict(list)
    for item in plan.items:
        if item.code is not None or item.examples:
            items_by_path[item.test_path].append(item)
    flags = " | ".join(f"doctest.{flag}" for flag in plan.option_flags) or "0"
    files = {}
    for path, items in sorted(items_by_path.items()):
        written = [item.code for item in items if item.code is not None]
        files[path] = written[0] if written else _render_doctest_module(items, flags)
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
    created: set[Path] = set()
    for relative in snapshot.files:
        target = workspace / relative
        if target.parent not in created:
            target.parent.mkdir(parents=True, exist_ok=True)
            created.add(target.parent)
        shutil.copy(snapshot.root / relative, target)
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


def _render_doctest_module(items: list[PlanItem], option_flags: str) -> str:
    module = module_import_path(items[0].module_path)
    tests = "".join(_TEST_TEMPLATE.format(test_name=item.test_name,
                                          reference=f"{module}.{item.qualname}" if item.qualname else module,
                                          examples=_examples_literal(item))
                    for item in items if item.examples)
    return _DOCTEST_MODULE_TEMPLATE.format(module_path=items[0].module_path, module=module,
                                           option_flags=option_flags, tests=tests)


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

