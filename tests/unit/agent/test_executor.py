from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from agentledger.agent import DocstringExamplePlanner, ReferenceAgent, apply_files, snapshot_directory

from .samples import BRIEF, make_sample_repo, write

if TYPE_CHECKING:
    from pathlib import Path

# In the project's own tests folder, a plain module beside its tests: no package, no conftest.
GENERATED = "tests/test_calc_generated.py"


def _execute(repo, workspace, agent=None):
    agent = agent or ReferenceAgent(planner=DocstringExamplePlanner())
    snapshot = snapshot_directory(repo)
    plan = agent.plan(agent.inspect(snapshot), snapshot, BRIEF)
    return snapshot, agent.execute(plan, snapshot, workspace)


def _run_suite(workspace: Path, test_file: str = GENERATED) -> subprocess.CompletedProcess[str]:
    """The generated tests, run the way a repository's own toolchain runs them: pytest."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
                          cwd=workspace, capture_output=True, text=True, timeout=60, check=False)


def test_one_idiomatic_pytest_test_per_documented_object_and_they_pass(tmp_path):
    _, execution = _execute(make_sample_repo(tmp_path / "repo"), tmp_path / "ws")
    assert sorted(execution.files) == [GENERATED]
    generated = execution.files[GENERATED]
    assert generated.startswith('"""Tests agentledger wrote from the docstring examples of pkg/calc.py."""\n\n'
                                "import doctest\nimport inspect\nimport textwrap\n\nimport pkg.calc\n")
    assert ("\n\ndef test_Accumulator_total():\n    run_examples(pkg.calc.Accumulator.total, r\'\'\'\n"
            "        >>> Accumulator().total()\n        0\n    \'\'\')\n") in generated
    assert ("def test_add():\n    run_examples(pkg.calc.add, r\'\'\'\n"
            "        >>> add(2, 3)\n        5\n        >>> total = add(1, 1)\n        >>> total * SCALE\n        20\n"
            "    \'\'\')\n") in generated
    assert generated.count("def test_") == 3
    assert "doctest.DocTestRunner" in generated and "exec(" not in generated
    verification = _run_suite(tmp_path / "ws")
    assert verification.returncode == 0, verification.stdout
    assert "3 passed" in verification.stdout


@pytest.mark.parametrize(
    ("original", "wrong", "failing_test", "shown"),
    [
        (">>> add(2, 3)\n    5", ">>> add(2, 3)\n    6", "test_add", "Expected:\n    6\nGot:\n    5"),
        ("ZeroDivisionError: division by zero", "ValueError: division by zero", "test_divide",
         "ZeroDivisionError: division by zero"),
    ],
    ids=["wrong-value", "wrong-exception"],
)
def test_a_wrong_example_fails_its_test_with_doctests_report(tmp_path, original, wrong, failing_test, shown):
    repo = make_sample_repo(tmp_path / "repo")
    calc = (repo / "pkg/calc.py").read_text()
    assert original in calc
    write(repo, "pkg/calc.py", calc.replace(original, wrong))
    _execute(repo, tmp_path / "ws")
    verification = _run_suite(tmp_path / "ws")
    assert verification.returncode == 1
    assert f"FAILED {GENERATED}::{failing_test}" in verification.stdout
    assert "1 failed, 2 passed" in verification.stdout
    assert shown in verification.stdout


DOCTEST_BEHAVIOURS = '''\
"""Examples that only the standard library's doctest runs right.

>>> class MyObject(object): pass
>>> MyObject.__name__
'MyObject'
"""

import time


def defines():
    """
    >>> shared = "set by defines"
    >>> shared
    'set by defines'
    """


def isolated():
    """Runs in fresh globals: nothing another object's examples defined is here.

    >>> shared
    Traceback (most recent call last):
      ...
    NameError: name 'shared' is not defined
    """


def directives():
    """
    >>> list(range(20))  # doctest: +ELLIPSIS
    [0, 1, ..., 19]
    >>> time.sleep(3600)  # doctest: +SKIP
    >>> raise SystemExit("a +SKIP example that ran would end the test run")  # doctest: +SKIP
    """


def project_flags():
    """Needs the project's NORMALIZE_WHITESPACE.

    >>> list(range(3))
    [0,   1,
     2]
    """


class Widget:
    """
    >>> Widget().name
    'widget'
    """

    name = "widget"

    def grow(self, by):
        """
        >>> Widget().grow(2)
        3
        """
        return 1 + by
'''


def test_directives_option_flags_compound_one_liners_classes_methods_and_isolation(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "behaviours.py", DOCTEST_BEHAVIOURS)
    write(repo, "pyproject.toml", '[tool.pytest.ini_options]\ndoctest_optionflags = "NORMALIZE_WHITESPACE"\n')
    _, execution = _execute(repo, tmp_path / "ws")
    generated = "tests/test_behaviours_generated.py"
    assert "OPTION_FLAGS = doctest.NORMALIZE_WHITESPACE" in execution.files[generated]
    verification = _run_suite(tmp_path / "ws", generated)
    assert verification.returncode == 0, verification.stdout
    assert "7 passed" in verification.stdout  # module, defines, isolated, directives, project_flags, Widget, grow
    # Without the project's flag, its example fails: the flag is what made it pass.
    write(repo, "pyproject.toml", "[project]\nname = 'behaviours'\n")
    _execute(repo, tmp_path / "ws")
    assert f"FAILED {generated}::test_project_flags" in _run_suite(tmp_path / "ws", generated).stdout


def test_the_diff_adds_the_generated_files_to_the_source(tmp_path):
    _, execution = _execute(make_sample_repo(tmp_path / "repo"), tmp_path / "ws")
    assert execution.diff.startswith(f"--- /dev/null\n+++ b/{GENERATED}\n")
    lines = execution.diff.splitlines()
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    assert "\n".join(added) == "\n".join(
        execution.files[path].rstrip("\n") for path in sorted(execution.files)
    )


def test_a_file_of_the_project_is_never_overwritten_the_tests_get_a_name_of_their_own(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, GENERATED, "# the project's own file of that name\n")
    _, execution = _execute(repo, tmp_path / "ws")
    assert sorted(execution.files) == ["tests/test_pkg_calc_generated.py"]  # the module's dotted path
    assert "--- /dev/null\n+++ b/tests/test_pkg_calc_generated.py\n" in execution.diff


def test_the_workspace_is_the_source_plus_generated_files_and_is_rebuilt_on_retry(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, ".venv/lib/big.py", "x = 1\n")
    workspace = tmp_path / "ws"
    write(workspace, "leftover_from_a_crashed_attempt.py", "x = 1\n")
    _, first = _execute(repo, workspace)
    _, second = _execute(repo, workspace)
    assert first == second
    assert not (workspace / "leftover_from_a_crashed_attempt.py").exists()
    assert not (workspace / ".venv").exists()
    assert (workspace / "README.md").read_text() == "# sample\n"
    for path, content in second.files.items():
        assert (workspace / path).read_text() == content


def test_apply_files_rebuilds_the_workspace_elsewhere_from_the_execution(tmp_path):
    snapshot, execution = _execute(make_sample_repo(tmp_path / "repo"), tmp_path / "ws")
    other = apply_files(execution.files, snapshot, tmp_path / "another-container")
    assert (other / GENERATED).read_text() == execution.files[GENERATED]
    assert _run_suite(other).returncode == 0


def test_apply_files_refuses_paths_outside_the_workspace(tmp_path):
    snapshot = snapshot_directory(make_sample_repo(tmp_path / "repo"))
    with pytest.raises(ValueError, match="escape"):
        apply_files({"../evil.py": "x = 1\n"}, snapshot, tmp_path / "ws")
    assert not (tmp_path / "evil.py").exists()
