"""Whether it works: the repository's tests run in a subprocess, with a deadline."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict

from agentledger.agent.planner import GENERATED_TESTS_DIR

TEST_COMMAND_ENV = "AGENTLEDGER_TEST_COMMAND"
DEFAULT_TEST_COMMAND = (
    sys.executable, "-m", "unittest", "discover", "-s", GENERATED_TESTS_DIR, "-t", ".",
)
OUTPUT_LIMIT_BYTES = 1 << 20
INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


class Verification(BaseModel):
    model_config = ConfigDict(frozen=True)

    command: list[str]
    exit_code: int | None  # None when the command was killed at its deadline
    output: str  # stdout and stderr interleaved, at most the last OUTPUT_LIMIT_BYTES
    duration_s: float
    timed_out: bool
    passed: bool


def resolve_test_command() -> list[str]:
    override = os.environ.get(TEST_COMMAND_ENV, "").strip()
    return shlex.split(override) if override else list(DEFAULT_TEST_COMMAND)


def run_tests(workspace: str | os.PathLike[str], command: list[str], timeout_s: float) -> Verification:
    workspace = Path(workspace).resolve()
    # The code under test is untrusted: it gets the host's PATH, HOME and locale, nothing else (no
    # credentials, no table or bucket names, no tokens).
    env = {name: os.environ[name] for name in INHERITED_VARIABLES if name in os.environ}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(workspace))
    started = time.monotonic()
    # Output goes to a file, not a pipe: a chatty suite can neither fill a pipe and stall
    # nor grow this process's memory beyond the tail that is kept.
    with tempfile.TemporaryFile() as output_file:
        # A session of its own makes the test run a process group that can be killed whole,
        # including any servers or workers the tests started.
        process = subprocess.Popen(
            command,
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            exit_code: int | None = process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(process)
            exit_code, timed_out = None, True
        duration_s = time.monotonic() - started
        output = _tail(output_file)
    if timed_out:
        output += f"\n[agentledger: killed after the {timeout_s:g} s timeout]\n"
    return Verification(
        command=list(command),
        exit_code=exit_code,
        output=output,
        duration_s=round(duration_s, 3),
        timed_out=timed_out,
        passed=exit_code == 0,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it finished between the deadline and the kill
    process.wait()


def _tail(output_file: IO[bytes]) -> str:
    size = output_file.seek(0, os.SEEK_END)
    omitted = max(0, size - OUTPUT_LIMIT_BYTES)
    output_file.seek(omitted)
    text = output_file.read().decode("utf-8", errors="replace")
    if omitted:
        text = f"[agentledger: output truncated, first {omitted} bytes omitted]\n" + text
    return text
