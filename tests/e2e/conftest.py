"""The local API served by `agentledger serve` in its own process, driven as a user drives it:
the CLI in subprocesses and plain HTTP."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT_S = 120  # the first synth of the CDK app takes ~30 s
SERVER_STOP_TIMEOUT_S = 15
CLI_TIMEOUT_S = 120
CONSOLE_SCRIPT = Path(sys.executable).parent / "agentledger"
CLI_COMMAND = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "infra.cli.main"]
# jsii silences its end-of-life banner only when this names the running Node major version.
NODE_MAJOR = subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"], capture_output=True,
                            text=True, check=False).stdout.strip()
CLI_ENVIRONMENT = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": NODE_MAJOR}

CALCULATOR = '''\
"""A calculator."""


def add(a, b):
    """Add two numbers.

    >>> add(2, 3)
    5
    """
    return a + b


def multiply(a, b):
    return a * b
'''


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class HttpResponse:
    status: int
    body: Any
    text: str


def http(base_url: str, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None) -> HttpResponse:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    return HttpResponse(status, json.loads(text) if text else None, text)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.exit_code == 0, f"exit {self.exit_code}: {self.stderr}"
        return json.loads(self.stdout)


def run_cli(*args: str) -> CliResult:
    completed = subprocess.run([*CLI_COMMAND, *args], capture_output=True, text=True, cwd=PROJECT_ROOT,
                               env=CLI_ENVIRONMENT, timeout=CLI_TIMEOUT_S, check=False)
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


@pytest.fixture(scope="session")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`agentledger serve` on a free port; on teardown Ctrl-C must stop it cleanly (exit 0)."""
    port = free_port()
    logs = tmp_path_factory.mktemp("serve")
    with open(logs / "stdout", "w") as stdout, open(logs / "stderr", "w") as stderr:
        server = subprocess.Popen([*CLI_COMMAND, "serve", "--port", str(port), "--keeper-interval", "1"],
                                  cwd=PROJECT_ROOT, env=CLI_ENVIRONMENT, stdout=stdout, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_answering(server, url, logs)
        yield url
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        try:
            exit_code = server.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            pytest.fail(f"`agentledger serve` did not stop within {SERVER_STOP_TIMEOUT_S}s of Ctrl-C")
    assert exit_code == 0, f"`agentledger serve` exited {exit_code} on Ctrl-C:\n{(logs / 'stderr').read_text()[-3000:]}"


def _wait_until_answering(server: subprocess.Popen[bytes], url: str, logs: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"`agentledger serve` exited {server.returncode}:\n{(logs / 'stderr').read_text()[-3000:]}")
        try:
            if http(url, "GET", "/runs").status == 200:
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.5)
    pytest.fail(f"`agentledger serve` did not answer within {SERVER_START_TIMEOUT_S}s")


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A small repository with one function documented by a doctest and one without tests."""
    root = tmp_path / "calculator"
    root.mkdir()
    (root / "calc.py").write_text(CALCULATOR)
    return root


@pytest.fixture
def cli(api_url: str) -> Callable[..., CliResult]:
    """The CLI against the served API, asking for JSON."""
    return lambda *args: run_cli(*args, "--api", api_url, "--json")
