from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.agent import ReferenceAgent, apply_files, snapshot_directory

from .samples import BRIEF, make_sample_repo, write

pytestmark = pytest.mark.unit

GENERATED = "agentledger_tests/test_pkg_calc.py"


def _execute(repo, workspace, agent=None):
    agent = agent or ReferenceAgent()
    snapshot = snapshot_directory(repo)
    plan = agent.plan(agent.inspect(snapshot), snapshot, BRIEF)
    return snapshot, agent.execute(plan, snapshot, workspace)


def _run_suite(workspace: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """The generated tests, run the way a repository's own toolchain would run them."""
    command = command or ("-m", "unittest", "discover", "-s", "agentledger_tests", "-t", ".")
    return subprocess.run([sys.executable, *command], cwd=workspace, capture_output=True, text=True, timeout=60)


def test_generated_tests_pass_under_unittest(tmp_path):
    _, execution = _execute(make_sample_repo(tmp_path / "repo"), tmp_path / "ws")
    verification = _run_suite(tmp_path / "ws")
    assert verification.returncode == 0, verification.stderr
    assert "Ran 4 tests" in verification.stderr  # three examples of add, one of divide
    assert sorted(execution.files) == ["agentledger_tests/__init__.py", GENERATED]


def test_generated_tests_pass_under_pytest(tmp_path):
    _execute(make_sample_repo(tmp_path / "repo"), tmp_path / "ws")
    verification = _run_suite(tmp_path / "ws", "-m", "pytest", "-q", "-p", "no:cacheprovider", "agentledger_tests")
    assert verification.returncode == 0, verification.stdout
    assert "4 passed" in verification.stdout


@pytest.mark.parametrize(
    ("original", "wrong", "failing_test"),
    [
        (">>> add(2, 3)\n    5", ">>> add(2, 3)\n    6", "test_add_example_1"),
        ("ZeroDivisionError: division by zero", "ValueError: division by zero", "test_divide_example_1"),
    ],
    ids=["wrong-value", "wrong-exception"],
)
def test_a_wrong_example_makes_verification_fail_with_the_failure_in_the_output(
    tmp_path, original, wrong, failing_test
):
    repo = make_sample_repo(tmp_path / "repo")
    calc = (repo / "pkg/calc.py").read_text()
    assert original in calc
    write(repo, "pkg/calc.py", calc.replace(original, wrong))
    _execute(repo, tmp_path / "ws")
    verification = _run_suite(tmp_path / "ws")
    assert verification.returncode not in (0, None)
    assert f"FAIL: {failing_test}" in verification.stderr
    assert "FAILED (failures=1)" in verification.stderr


def test_the_diff_adds_the_generated_files_to_the_source(tmp_path):
    _, execution = _execute(make_sample_repo(tmp_path / "repo"), tmp_path / "ws")
    assert execution.diff.startswith("--- /dev/null\n+++ b/agentledger_tests/__init__.py\n")
    assert f"--- /dev/null\n+++ b/{GENERATED}\n" in execution.diff
    lines = execution.diff.splitlines()
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    assert "\n".join(added) == "\n".join(
        execution.files[path].rstrip("\n") for path in sorted(execution.files)
    )


def test_the_diff_modifies_a_generated_file_already_in_the_source(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, GENERATED, "# an older generation\n")
    _, execution = _execute(repo, tmp_path / "ws")
    assert f"--- a/{GENERATED}\n+++ b/{GENERATED}\n" in execution.diff
    assert "-# an older generation\n" in execution.diff


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
