"""A hostile repository through `agentledger serve` (issues 22 and 32): its test tries what code under
test should never manage, and reports each attempt in the output the build uploads:
- read serve's profiles and other processes' environments; reach the API, the S3 endpoint and
  another loopback port; write outside its build directory; fill the disk;
- poison what later repositories' builds run: the cached venvs, agentledger's own tools, a forged
  cache entry for a repository yet to come, a `pip` of its own at the repository's top;
- change agentledger's kit in the build, kill it, forge what it reports, leave a daemon behind;
- become root of a user namespace of its own.
The first build to run its code is the execute stage's, which writes the tests. Each attempt fails;
where it can be, that is checked from outside the build too, and a clean repository run afterwards
carries none of its marks. And a plain repository still installs a dependency from the package
index and passes in the sandbox."""
from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agentledger.local.profiles import instance_profiles_dir
from agentledger.local.runtime import default_build_cache
from agentledger.testrun.config import PYTEST_COMMAND
from tests.resident_memory import memory_mib, reset_peak

from .conftest import CLI_ENVIRONMENT, PROFILES_DIR, CliResult, free_port, run_cli, serving_process

pytestmark = pytest.mark.e2e

Cli = Callable[..., CliResult]
ATTEMPTS = ("read_profiles", "read_environ", "connect_api", "use_s3_endpoint", "connect_other_port",
            "write_outside", "poison_cache", "poison_tools", "forge_cache_entry", "rewrite_kit", "new_user_namespace",
            "flood_s3_endpoint", "fill_disk", "forge_result", "kill_kit")
FLOOD_POSTS, FLOOD_MIB = 4, 100
# What serve's resident memory may grow by while a hostile run floods its S3 endpoint (four 100 MiB
# posts at once cost it 739 MiB when the endpoint read a body before checking it).
SERVE_GROWTH_BOUND_MIB = 256
# What the attacker's code prints or plants wherever it runs: a later repository's outputs must never carry it.
MARKERS = ("POISONED", "HOSTILE-PIP-RAN", "HOSTILE")
# The cache as every build sees it (the buildspec's path), wherever serve keeps it.
SHARED_CACHE = "/root/.cache/agentledger"
BUILD_DISK_BYTES = 2 << 30  # infra/agentledger/local/codebuild.py's SandboxLimits.disk_bytes
BUILDS_ROOT = "/tmp/agentledger-builds"  # LocalRuntime's work root for builds

HOSTILE_MODULE = '''\
"""Looks harmless."""


def double(value):
    """Twice the value.

    >>> double(21)
    42
    """
    return 2 * value
'''

# The hostile test: every attempt is reported as "HOSTILE <attempt> <blocked|ESCAPED> <detail>".
HOSTILE_TEST = r'''
import json, os, signal, socket, subprocess, sys, sysconfig, time
from pathlib import Path

SETTINGS = json.loads((Path(__file__).parent / "hostile.json").read_text())
RESULTS = Path(os.environ["AGENTLEDGER_RESULTS"])
REPORT = []


def report(attempt, escaped, detail):
    line = f"HOSTILE {attempt} {'ESCAPED' if escaped else 'blocked'} {detail}"
    REPORT.append(line)
    print(f"\n{line}", flush=True)  # on a line of its own, after pytest's progress dots


def read_profiles():
    try:
        text = (Path(SETTINGS["profiles"]) / "credentials").read_text()
        report("read_profiles", True, text.replace("\n", " | "))
    except OSError as error:
        report("read_profiles", False, repr(error))


def read_environ():
    readable, secrets = [], []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            readable.append(entry.name)
            if any(marker in environ for marker in (b"AGENTLEDGER_INPUT", b"AGENTLEDGER_OUTPUT", b"AWS_", b"X-Amz")):
                secrets.append(entry.name)
    visible = sorted(int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit())
    report("read_environ", bool(secrets), f"visible={visible} readable={readable} with_secrets={secrets}")


def connect(attempt, port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            report(attempt, True, f"connected to 127.0.0.1:{port}")
    except OSError as error:
        report(attempt, False, f"127.0.0.1:{port}: {error!r}")


def use_s3_endpoint(port):
    """The one host port a build reaches (its output is uploaded there), asked for what the build
    holds no grant for: the ledger through DynamoDB, and the bucket's listing, signed with garbage."""
    import http.client
    forged = ("AWS4-HMAC-SHA256 Credential=AKIAFORGED/20260101/us-east-1/s3/aws4_request, "
              "SignedHeaders=host, Signature=00")
    answers = {}
    for name, method, path, headers in (
            ("dynamodb_scan", "POST", "/", {"X-Amz-Target": "DynamoDB_20120810.ListTables",
                                            "Content-Type": "application/x-amz-json-1.0"}),
            ("list_buckets", "GET", "/", {}),
            ("list_objects", "GET", "/?list-type=2", {})):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request(method, path, body=b"{}" if method == "POST" else None,
                               headers={**headers, "Authorization": forged})
            answers[name] = connection.getresponse().status
        except OSError as error:
            answers[name] = repr(error)
    escaped = any(isinstance(status, int) and status < 300 for status in answers.values())
    report("use_s3_endpoint", escaped, f"127.0.0.1:{port} answered {answers}")


def write_outside():
    escaped = []
    for path in (SETTINGS["outside"], "/usr/lib/agentledger-hostile", str(Path(SETTINGS["profiles"]) / "planted")):
        try:
            Path(path).write_text("planted\n")
            escaped.append(path)
        except OSError:
            pass
    report("write_outside", bool(escaped), f"wrote={escaped}")


def plant(targets):
    planted = []
    for target in targets:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("import sys; print('POISONED', file=sys.stderr)\n")
            planted.append(str(target))
        except OSError:
            pass
    return planted


def poison_cache():
    site = Path(sysconfig.get_paths()["purelib"])  # the venv it runs in, which the cache keeps
    targets = [site / "agentledger_hostile.pth"]
    targets += [venv / "agentledger_hostile.pth" for venv in Path(SETTINGS["cache"], "venvs").glob("*")]
    targets += [Path(p) / "agentledger_hostile.pth"
                for p in Path(SETTINGS["cache"], "venvs").glob("*/lib/python*/site-packages")]
    report("poison_cache", bool(plant(targets)), f"venv={sys.prefix} targets={len(targets)}")


def poison_tools():
    """agentledger's own tools (Pynguin, coverage.py), which every repository's test writer runs."""
    tools = Path(SETTINGS["cache"], "tools")
    targets = [Path(p) / "agentledger_hostile.pth" for p in tools.glob("*/pynguin/lib/python*/site-packages")]
    targets += [Path(p) / "agentledger_hostile.pth" for p in tools.glob("*/coverage")]
    targets.append(tools / ("0" * 24) / "pynguin" / "agentledger_hostile.pth")
    report("poison_tools", bool(plant(targets)), f"targets={len(targets)}")


def forge_cache_entry():
    """An entry for a repository yet to come (its name is a digest anyone can guess), marked
    installed, with a .pth in it: no build may make one but the one its key names."""
    entry = Path(SETTINGS["cache"], "venvs", "f" * 24)
    planted = plant([entry / "lib" / "python3.11" / "site-packages" / "agentledger_hostile.pth"])
    try:
        (entry / ".agentledger-installed").touch()
        planted.append("marker")
    except OSError:
        pass
    report("forge_cache_entry", bool(planted), f"planted={planted}")


def rewrite_kit():
    """agentledger's own files in the build: the kit, its entry, its configuration and records."""
    control = Path.cwd().parent / "agentledger"
    changed = []
    for path in ("buildkit/driver.py", "buildkit/install.py", "__main__.py", "config.json", "generation.json",
                 "results/result.json", "state/output.log"):
        try:
            with open(control / path, "a") as opened:
                opened.write("\n# HOSTILE\n")
            changed.append(path)
        except OSError:
            pass
    try:
        os.rename(control, control.with_name("agentledger-moved"))
        changed.append("renamed the kit's directory")
    except OSError:
        pass
    report("rewrite_kit", bool(changed), f"changed={changed}")


def new_user_namespace():
    """Root of a user namespace of its own, the start of many an escape."""
    attempts = {}
    for argv in (["unshare", "-Ur", "id", "-u"], ["unshare", "--net", "true"]):
        finished = subprocess.run(argv, capture_output=True, text=True)
        attempts[" ".join(argv)] = (finished.returncode, (finished.stdout + finished.stderr).strip()[:80])
    report("new_user_namespace", any(code == 0 for code, _ in attempts.values()), f"{attempts}")


def flood_s3_endpoint():
    """The one port of the host a build reaches, sent large unsigned posts at once, each streamed
    to its end unless the endpoint refuses it first."""
    import http.client, threading
    answers = []

    def post():
        boundary = "hostile"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nruns/x\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n").encode()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", SETTINGS["s3_port"], timeout=60)
            connection.putrequest("POST", "/agentledger-artifacts")
            connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
            connection.putheader("Content-Length", str(len(head) + (SETTINGS["flood_mib"] << 20)))
            connection.endheaders()
            connection.send(head)
            chunk = b"\0" * (1 << 20)
            try:
                for _ in range(SETTINGS["flood_mib"]):
                    connection.send(chunk)
            except OSError:
                pass  # refused before it was all sent
            answers.append(connection.getresponse().status)
        except OSError as error:
            answers.append(repr(error))

    threads = [threading.Thread(target=post) for _ in range(SETTINGS["flood_posts"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report("flood_s3_endpoint", any(isinstance(a, int) and a < 300 for a in answers), f"answers={answers}")


def fill_disk():
    written, chunk, files, failure = 0, b"x" * (64 << 20), [], None
    try:
        for number in range(10_000):
            path = Path(f"filler-{number}")
            files.append(path)
            with path.open("wb") as file:
                for _ in range(4):
                    file.write(chunk)
                    written += len(chunk)
    except OSError as error:
        failure = repr(error)
    for path in files:
        path.unlink(missing_ok=True)
    report("fill_disk", written > SETTINGS["disk_bytes"], f"written={written} stopped_by={failure}")


def forge_results():
    """A passing result.json, a generation result that keeps this file, and JUnit XML claiming five
    passed tests, where the tests are told to write their reports."""
    (RESULTS / "junit").mkdir(parents=True, exist_ok=True)
    (RESULTS / "junit" / "forged.xml").write_text(
        '<testsuite name="forged" tests="5" failures="0" errors="0" skipped="0">'
        + "".join(f'<testcase classname="forged" name="t{n}"/>' for n in range(5)) + "</testsuite>")
    (RESULTS / "generation.json").write_text(json.dumps({"candidates": [], "kept": ["tests/test_hostile.py"]}))
    (RESULTS / "result.json").write_text(json.dumps({
        "install": {"commands": 1, "exit_code": 0, "duration_s": 1.0, "timed_out": False, "cache_hit": True},
        "test": {"command": "forged", "exit_code": 0, "duration_s": 1.0, "timed_out": False},
        "junit_files": ["forged.xml"]}))
    # Whether any of it is believed is the run's to show, from outside.
    report("forge_result", False, f"cwd={Path.cwd().parent}")


def kill_kit():
    """agentledger's kit, which runs this test and writes what the build reports."""
    killed, refused = [], []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"\0-I\0agentledger\0" in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(entry.name)
        except PermissionError:
            refused.append(entry.name)
        except OSError:
            pass
    report("kill_kit", bool(killed), f"killed={killed} refused={refused}")


def test_hostile():
    attempted = Path(__file__).parent / ".attempted"
    if attempted.exists():
        return  # once a build: the test writer's filters run this suite again and again
    attempted.write_text("")
    read_profiles()
    read_environ()
    connect("connect_api", SETTINGS["api_port"])
    use_s3_endpoint(SETTINGS["s3_port"])
    connect("connect_other_port", SETTINGS["other_port"])
    write_outside()
    poison_cache()
    poison_tools()
    forge_cache_entry()
    rewrite_kit()
    new_user_namespace()
    flood_s3_endpoint()
    fill_disk()
    # A daemon of its own session, to approve the run with whatever was stolen, long after this test.
    subprocess.Popen([sys.executable, str(Path(__file__).parent / "daemon.py"), SETTINGS["token"]],
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    forge_results()
    kill_kit()
    time.sleep(1)  # the daemon's start: the kit must end it all the same
'''

# The daemon: for a minute, tries to reach the API and approve with whatever the profiles gave.
DAEMON = r'''
import json, socket, sys, time
from pathlib import Path
settings = json.loads((Path(__file__).parent / "hostile.json").read_text())
try:
    stolen = (Path(settings["profiles"]) / "credentials").read_text()
except OSError:
    stolen = ""
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        with socket.create_connection(("127.0.0.1", settings["api_port"]), timeout=1) as connection:
            connection.sendall(b"GET /runs HTTP/1.0\r\nX-Stolen: " + str(len(stolen)).encode() + b"\r\n\r\n")
    except OSError:
        pass
    time.sleep(0.2)
'''


@pytest.fixture
def other_port() -> Iterator[tuple[int, list[str]]]:
    """A listener on another loopback port, counting whoever reaches it."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    reached: list[str] = []
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                connection, address = listener.accept()
            except TimeoutError:
                continue
            reached.append(f"{address}")
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1], reached
    stopping.set()
    thread.join()
    listener.close()


# A package named pip at the repository's top: `python -m pip` run in the repository would run it
# instead of pip (the working directory comes first on its path), and so would anything of
# agentledger's that did.
SHADOW_PIP = "import sys\nprint('HOSTILE-PIP-RAN', file=sys.stderr)\nraise SystemExit(0)\n"


def _hostile_repository(root: Path, settings: dict[str, Any]) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pip").mkdir()
    (root / "pip" / "__init__.py").write_text(SHADOW_PIP)
    (root / "pip" / "__main__.py").write_text(SHADOW_PIP)
    (root / "hostile.py").write_text(HOSTILE_MODULE)
    # Its reports go to the build's output as they are made, not into pytest's capture.
    (root / "pytest.ini").write_text("[pytest]\naddopts = -s\n")
    (root / "tests" / "test_hostile.py").write_text(HOSTILE_TEST)
    (root / "tests" / "hostile.json").write_text(json.dumps(settings))
    (root / "tests" / "daemon.py").write_text(DAEMON)
    return root


def _attempts(output: str) -> dict[str, tuple[str, str]]:
    found = {}
    for line in output.splitlines():
        if line.startswith("HOSTILE "):
            _, attempt, verdict, detail = line.split(" ", 3)
            found[attempt] = (verdict, detail)
    return found


def _processes_left(token: str, build_dir: str) -> list[str]:
    """Any process of the build still alive: the daemon (by its token), or anything running in
    the build's directory."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            cwd = str((entry / "cwd").readlink())
        except OSError:
            continue
        if token.encode() in cmdline or cwd.startswith(build_dir):
            left.append(f"{entry.name}: {cmdline[:200]!r} in {cwd}")
    return left


def test_a_hostile_repository_escapes_nothing_and_what_it_forges_is_not_what_the_run_shows(
        cli: Cli, api_url: str, tmp_path: Path, repository: Path, other_port: tuple[int, list[str]]) -> None:
    port, reached = other_port
    token = f"agentledger-hostile-{uuid.uuid4().hex}"
    outside = Path("/var/tmp") / token  # world-writable on the host, read-only in the sandbox
    earlier = cli("run", str(repository), "--wait").json()  # its artifact links name the S3 endpoint
    s3_port = urlsplit(earlier["artifacts"][0]["url"]).port
    profiles = instance_profiles_dir(api_url, PROFILES_DIR)
    settings = {"profiles": str(profiles), "api_port": int(api_url.rsplit(":", 1)[1]), "s3_port": s3_port,
                "cache": SHARED_CACHE, "flood_posts": FLOOD_POSTS, "flood_mib": FLOOD_MIB,
                "other_port": port, "outside": str(outside), "disk_bytes": BUILD_DISK_BYTES, "token": token}
    hostile = _hostile_repository(tmp_path / "hostile", settings)

    serve = serving_process(api_url)
    resident_before = reset_peak(serve)
    finished = cli("run", str(hostile), "--wait")
    peak = memory_mib("VmHWM", serve)
    document = json.loads(finished.stdout)
    run_id = document["run"]["run_id"]
    # The first build that runs the repository's code is the execute stage's, which writes tests.
    output = cli("artifact", run_id, "generation-output.txt").stdout
    attempts = _attempts(output)

    # Every attempt was made, reported, and failed.
    assert set(attempts) == set(ATTEMPTS), output
    escaped = {attempt: detail for attempt, (verdict, detail) in attempts.items() if verdict != "blocked"}
    assert escaped == {}, output
    credentials = (profiles / "credentials").read_text()
    secrets = [line.split("=", 1)[1].strip() for line in credentials.splitlines() if "secret" in line]
    assert secrets and not any(secret in output for secret in secrets)
    visible = json.loads(attempts["read_environ"][1].split("visible=")[1].split(" readable=")[0])
    assert len(visible) < 20, visible  # its own namespace's processes, not this machine's

    # Checked from outside the build as well.
    assert resident_before is not None and peak is not None
    assert peak - resident_before < SERVE_GROWTH_BOUND_MIB, (resident_before, peak)
    assert reached == []
    assert not outside.exists() and not (profiles / "planted").exists()
    planted = [str(path) for path in default_build_cache().rglob("agentledger_hostile.pth")]
    planted += [str(path) for path in default_build_cache().glob(f"venvs/{'f' * 24}*")]
    assert planted == []
    build_dir = attempts["forge_result"][1].split("cwd=")[1].split(" ")[0]
    assert build_dir.startswith(f"{BUILDS_ROOT}/build-"), build_dir
    assert _processes_left(token, build_dir) == []

    # The kit survived and wrote what the build reports: the forged results are not what the run
    # shows, and nothing approved it.
    assert document["run"]["status"] == "awaiting_review", document
    generation = json.loads(cli("artifact", run_id, "generation.json").stdout)
    kept = {candidate["test_path"] for candidate in generation["candidates"] if candidate["dropped_by"] is None}
    assert kept == {"tests/test_hostile_generated.py"}, generation  # the kit's, not the forged one
    command = json.loads(cli("artifact", run_id, "command.json").stdout)
    assert command["command"] == PYTEST_COMMAND and command["exit_code"] == 0, command
    shown = cli("show", run_id).json()
    assert not (shown.get("review") or {}).get("decision")
    assert [d for d in shown["decisions"] if "approve" in json.dumps(d)] == []

    # The shadowing pip never ran: not in the install, not in anything of agentledger's.
    assert "HOSTILE-PIP-RAN" not in output

    # A clean repository afterwards runs clean: nothing of the attacker's runs in its test writer's
    # build or in verify's, and nothing of it is in what the reviewer reads.
    later = cli("run", str(repository), "--wait").json()
    later_id = later["run"]["run_id"]
    later_outputs = {name: cli("artifact", later_id, name).stdout
                     for name in ("generation-output.txt", "test-output.txt")}
    assert later["run"]["status"] == "awaiting_review", later_outputs
    assert {name: [m for m in MARKERS if m in text] for name, text in later_outputs.items()} == \
        {name: [] for name in later_outputs}
    assert "HOSTILE" not in cli("diff", later_id).stdout


# A request that, printed raw, would set the reviewer's terminal title, move the cursor up two lines
# and write over them (a C1 CSI too).
HOSTILE_REQUEST = "write tests\x1b]0;owned\x07\x1b[2A\rApproved by security\x9b2J"


def test_a_plain_repository_installs_a_dependency_from_the_package_index_and_passes(
        cli: Cli, api_url: str, tmp_path: Path) -> None:
    root = tmp_path / "texts"
    root.mkdir()
    # A requirement line of its own, so the install is not a cache hit: pip reaches the index.
    (root / "requirements.txt").write_text(f"# {uuid.uuid4().hex}\nsix\n")
    (root / "texts.py").write_text('''"""Text helpers."""
import six


def shout(text):
    """Upper-cased, with a bang.

    >>> shout("hi")
    'HI!'
    """
    return six.text_type(text).upper() + "!"


def whisper(text):
    return text.lower()
''')
    finished = cli("run", str(root), "--wait", "--request", HOSTILE_REQUEST).json()
    run_id = finished["run"]["run_id"]
    output = cli("artifact", run_id, "test-output.txt").stdout
    assert finished["run"]["status"] == "awaiting_review", output
    assert finished["summary"]["tests"]["outcome"] == "passed", output
    assert finished["run"]["request"] == HOSTILE_REQUEST  # kept as it was asked: only printing escapes it
    shown = run_cli("show", run_id, "--api", api_url).stdout  # what a reviewer reads on a terminal
    assert "write tests\\x1b]0;owned\\x07\\x1b[2A\\x0dApproved by security\\x9b2J" in shown
    assert not [c for c in shown if c not in "\n\t" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f)]
    # The first build, the execute stage's, installed it; verify's found it in the cache.
    installed = cli("artifact", run_id, "generation-output.txt").stdout
    assert "install -r requirements.txt" in installed and "six" in installed
    assert "Downloading" in installed or "Collecting six" in installed, installed  # fetched, not found on disk


def test_serve_without_the_sandbox_tools_refuses_to_run_builds_and_says_how_to_get_them(tmp_path: Path) -> None:
    # A PATH that holds none of bwrap, pasta and the util-linux tools around them.
    refused = run_cli("serve", "--port", str(free_port()), environment={**CLI_ENVIRONMENT, "PATH": str(tmp_path)})
    assert refused.exit_code == 1, refused
    assert refused.stderr.startswith("agentledger: refusing to run test builds: the local build sandbox needs bwrap")
    assert "apt-get install -y bubblewrap passt" in refused.stderr and "--unsafe-local-builds" in refused.stderr


def test_serve_refuses_a_build_cache_it_cannot_keep_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    refused = run_cli("serve", "--port", str(free_port()),
                      environment={**CLI_ENVIRONMENT, "AGENTLEDGER_BUILD_CACHE": str(tmp_path / "a-file" / "cache")})
    assert refused.exit_code == 1, refused
    assert refused.stderr == (f"agentledger: refusing to start: cannot keep the build cache at {tmp_path}/a-file/cache "
                              "(AGENTLEDGER_BUILD_CACHE): Not a directory\n")
