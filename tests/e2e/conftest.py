"""The local API served by `agentledger serve` in its own process, driven as a user drives it:
the CLI in subprocesses and plain HTTP."""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from agentledger.cli.signing import request_signer
from agentledger.local.profiles import instance_profiles_dir

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT_S = 120  # the first synth of the CDK app takes ~30 s
SERVER_STOP_TIMEOUT_S = 15
CLI_TIMEOUT_S = 120
CONSOLE_SCRIPT = Path(sys.executable).parent / "agentledger"
CLI_COMMAND = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "agentledger.cli.main"]
# jsii silences its end-of-life banner only when this names the running Node major version.
NODE_MAJOR = subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"], capture_output=True,
                            text=True, check=False).stdout.strip()
# Under which this session's `serve`s write their callers' profiles, and the CLI reads them; removed,
# keys and all, when the process that made it (each worker, and the one that collects) exits.
PROFILES_DIR = Path(tempfile.mkdtemp(prefix="agentledger-e2e-profiles-"))
atexit.register(shutil.rmtree, PROFILES_DIR, ignore_errors=True)
CLI_ENVIRONMENT = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": NODE_MAJOR,
                   "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(PROFILES_DIR)}
REQUESTER, REVIEWER, OPERATOR = "agentledger-requester", "agentledger-reviewer", "agentledger-operator"
# The stack every e2e `serve` deploys, unless a test is about another (one context, one synthesis):
# the docstring-example writer, since every e2e run but test_generation.py's would otherwise spend
# Pynguin's search budget (those repositories choose Pynguin themselves); and a candidate passes
# two runs in a row, not five: what the e2e tests show does not hang on the count, but a kept test
# shows that a real session ran each candidate file that many times (the durable layer's runs one).
E2E_CONTEXT = ("-c", "writer=doctest", "-c", "generationRuns=2")

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


# Ends a request to a broken serve. On two loaded cores (a suite's other worker running fifty
# runs' builds) a first request can wait on a cold function for over a minute.
HTTP_TIMEOUT_S = 180


@dataclass
class HttpResponse:
    status: int
    body: Any
    text: str
    headers: dict[str, str]


def http(base_url: str, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None, profile: str | None = REQUESTER,
         profiles: Path = PROFILES_DIR) -> HttpResponse:
    """Plain HTTP, SigV4-signed as `profile` (None: unsigned) from the profiles the `serve` at
    `base_url` wrote under `profiles`, as `curl --aws-sigv4` would send it."""
    data = json.dumps(body).encode() if body is not None else None
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if profile is not None:
        sign = request_signer(base_url, profile, instance_profiles_dir(base_url, profiles))
        all_headers = sign(method, base_url + path, all_headers, data)
    request = urllib.request.Request(base_url + path, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            status, text, answered = response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, text, answered = error.code, error.read().decode(), dict(error.headers)
    return HttpResponse(status, json.loads(text) if text else None, text, answered)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self, exit_code: int = 0) -> Any:
        assert self.exit_code == exit_code, f"exit {self.exit_code}: {self.stderr}"
        return json.loads(self.stdout)


def run_cli(*args: str, environment: dict[str, str] | None = None) -> CliResult:
    completed = subprocess.run([*CLI_COMMAND, *args], capture_output=True, text=True, cwd=PROJECT_ROOT,
                               env=environment or CLI_ENVIRONMENT, timeout=CLI_TIMEOUT_S, check=False)
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


@pytest.fixture(scope="session")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`agentledger serve` on a free port; on teardown Ctrl-C must stop it cleanly (exit 0)."""
    with served(tmp_path_factory.mktemp("serve"), CLI_ENVIRONMENT, *E2E_CONTEXT) as url:
        yield url


@contextlib.contextmanager
def served(logs: Path, environment: dict[str, str], *options: str, command: Sequence[str] = tuple(CLI_COMMAND),
           cwd: Path = PROJECT_ROOT) -> Iterator[str]:
    port = free_port()
    with (logs / "stdout").open("w") as stdout, (logs / "stderr").open("w") as stderr:
        # The tests' repositories lie under the temporary directory: allowed, as a user would allow theirs.
        # The review keeper runs every 15 s, not serve's 5: no test waits on it, and each pass loads
        # and checks every run awaiting review, which a shared serve accumulates (a test that needs
        # another interval passes its own --keeper-interval, which comes later and wins).
        server = subprocess.Popen([*command, "serve", "--port", str(port), "--allow-root", tempfile.gettempdir(),
                                   "--keeper-interval", "15", *options],
                                  cwd=cwd, env=environment, stdout=stdout, stderr=stderr)
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


def serving_process(url: str) -> int:
    """The process of the `agentledger serve` listening on that URL's port."""
    port = str(urlsplit(url).port).encode()
    for process in Path("/proc").iterdir():
        try:
            arguments = (process / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in arguments and b"--port" in arguments and port in arguments:
            return int(process.name)
    raise AssertionError(f"no `agentledger serve` process listens on {url}")


def _wait_until_answering(server: subprocess.Popen[bytes], url: str, logs: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"`agentledger serve` exited {server.returncode}:\n{(logs / 'stderr').read_text()[-3000:]}")
        try:
            # Answering (unsigned, so refused) means the stack is up and the profiles are written;
            # what it says of them, a user reads in the lines it prints once it answers.
            if http(url, "GET", "/runs", profile=None).status == 403 and _announced(logs / "stdout"):
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.5)
    pytest.fail(f"`agentledger serve` did not answer and say where its callers' profiles are within "
                f"{SERVER_START_TIMEOUT_S}s")


def _announced(stdout: Path) -> bool:
    return any(line.startswith("console: ") for line in stdout.read_text().splitlines())


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


def wait_for_status(api_url: str, run_id: str, status: str, timeout_s: float = 30,
                    profiles: Path = PROFILES_DIR) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        document = http(api_url, "GET", f"/runs/{run_id}", profiles=profiles).body
        if document["run"]["status"] == status or time.monotonic() > deadline:
            assert document["run"]["status"] == status, document["run"]
            return document
        time.sleep(0.5)


def assert_one_line_error(result: CliResult, *fragments: str) -> None:
    assert result.exit_code == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentledger: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def awaiting_review(cli: Callable[..., CliResult], repository: Path) -> dict[str, Any]:
    """A run started and followed by the CLI until it waits for review."""
    return cli("run", str(repository), "--wait", "--request", "write tests for calc").json()


@dataclass(frozen=True)
class SharedReview:
    repository: Path
    view: dict[str, Any]  # the run's view as `run --wait` printed it


@pytest.fixture(scope="module")
def read_only_review(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> SharedReview:
    """One run waiting for review that a module's tests which only read it share: each driving its
    own to review was most of a module's time."""
    repository = tmp_path_factory.mktemp("read-only") / "calculator"
    repository.mkdir()
    (repository / "calc.py").write_text(CALCULATOR)
    waiting = run_cli("run", str(repository), "--wait", "--request", "write tests for calc", "--api", api_url,
                      "--json").json()
    return SharedReview(repository, waiting)
