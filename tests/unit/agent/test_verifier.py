from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from agentledger.agent import ReferenceAgent, resolve_test_command, run_tests
from agentledger.agent.verifier import DEFAULT_TEST_COMMAND, OUTPUT_LIMIT_BYTES

pytestmark = pytest.mark.unit


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_command_past_its_deadline_is_killed_and_reported(tmp_path):
    started = time.monotonic()
    verification = run_tests(tmp_path, _python("import time; time.sleep(30)"), timeout_s=1)
    assert time.monotonic() - started < 10
    assert verification.timed_out
    assert verification.exit_code is None
    assert not verification.passed
    assert "timeout" in verification.output


def _is_running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    # A killed orphan can linger as a zombie until something reaps it; it no longer runs.
    return "State:\tZ" not in status


def test_the_timeout_kills_processes_the_tests_started(tmp_path):
    spawn_and_wait = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "time.sleep(30)\n"
    )
    run_tests(tmp_path, _python(spawn_and_wait), timeout_s=2)
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while _is_running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _is_running(child)


def test_output_merges_streams_and_keeps_the_last_mebibyte(tmp_path):
    noisy = (
        "import sys\n"
        f"sys.stdout.write('x' * {OUTPUT_LIMIT_BYTES + 1000}); sys.stdout.flush()\n"
        "sys.stderr.write('LAST LINE FROM STDERR'); sys.exit(3)\n"
    )
    verification = run_tests(tmp_path, _python(noisy), timeout_s=30)
    assert verification.exit_code == 3
    assert not verification.passed and not verification.timed_out
    note, _, kept = verification.output.partition("\n")
    omitted = 1000 + len("LAST LINE FROM STDERR")
    assert note == f"[agentledger: output truncated, first {omitted} bytes omitted]"
    assert len(kept) == OUTPUT_LIMIT_BYTES
    assert kept.endswith("xxLAST LINE FROM STDERR")


def test_tests_run_in_the_workspace_with_it_on_the_import_path(tmp_path):
    show = "import os; print(os.getcwd(), os.environ['PYTHONPATH'], os.environ['PYTHONDONTWRITEBYTECODE'])"
    verification = run_tests(tmp_path, _python(show), timeout_s=30)
    workspace = str(tmp_path.resolve())
    assert verification.output.split() == [workspace, workspace, "1"]
    assert verification.passed
    assert verification.command == _python(show)


def test_the_test_command_can_be_overridden_by_the_environment(monkeypatch):
    monkeypatch.delenv("AGENTLEDGER_TEST_COMMAND", raising=False)
    assert resolve_test_command() == list(DEFAULT_TEST_COMMAND)
    monkeypatch.setenv("AGENTLEDGER_TEST_COMMAND", "python -m pytest -q 'tests dir'")
    assert resolve_test_command() == ["python", "-m", "pytest", "-q", "tests dir"]
    assert ReferenceAgent().test_command == ["python", "-m", "pytest", "-q", "tests dir"]
    assert ReferenceAgent(test_command=["make", "test"]).test_command == ["make", "test"]


def test_the_default_command_uses_the_running_interpreter():
    assert DEFAULT_TEST_COMMAND[0] == sys.executable
    assert os.path.isabs(DEFAULT_TEST_COMMAND[0])


def test_the_code_under_test_sees_no_credentials_or_resource_names(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-value")
    monkeypatch.setenv("LEDGER_TABLE_NAME", "ledger-table")
    verification = run_tests(tmp_path, _python("import os; print(sorted(os.environ.items()))"), timeout_s=30)
    assert verification.passed
    assert "secret-value" not in verification.output
    assert "ledger-table" not in verification.output
    assert "AWS_" not in verification.output
