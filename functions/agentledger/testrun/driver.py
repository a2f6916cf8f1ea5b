"""The test run's driver: runs inside the build, on the repository under test.

    python3 agentledger/driver.py tools      install agentledger's own tools, when the build generates tests
    python3 agentledger/driver.py install    install the dependencies (into the cached venv on a miss)
    python3 agentledger/driver.py test       run the tests, collect results into agentledger/results/
    python3 agentledger/driver.py upload     POST agentledger/results/ as a tarball to the output grant
    python3 agentledger/driver.py cache-key  print the name of the venv the install would use, if any

Install and test are two commands, run in two phases of the build, so that a host that can (the
local sandbox) gives the install a writable cache entry and the tests a read-only cache.

It is copied into the build on its own, so it uses the standard library only and stays valid on
Python 3.9. The repository is untrusted: its install and test commands get an environment built
from scratch, a process group that is killed when they end, and nothing they leave behind is read
from outside the repository.
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Repeated from agentledger/testrun/layout.py (tests/unit/testrun/test_layout.py checks they agree).
REPOSITORY_DIR = "repository"
CONFIG_FILE = "agentledger/config.json"
RESULTS_DIR = "agentledger/results"
RESULT_FILE = "result.json"
OUTPUT_FILE = "output.txt"
JUNIT_DIR = "junit"
COVERAGE_DIR = "coverage"
INPUT_URL_VARIABLE = "AGENTLEDGER_INPUT_URL"
OUTPUT_GRANT_VARIABLE = "AGENTLEDGER_OUTPUT_GRANT"
TEST_RUN_VARIABLE = "AGENTLEDGER_TEST_RUN"
CACHE_VARIABLE = "AGENTLEDGER_CACHE"
RESULTS_VARIABLE = "AGENTLEDGER_RESULTS"
OUTPUT_LIMIT_BYTES = 1 << 20
OUTPUT_ARCHIVE_LIMIT_BYTES = 32 << 20
GENERATION_REQUEST_FILE = "agentledger/generation.json"

# The driver's own files, outside the results so that only what is meant to leave is uploaded.
RAW_OUTPUT_FILE = "agentledger/output.log"
INSTALL_RESULT_FILE = "agentledger/install.json"  # what `install` did, for `test`
OUTPUT_ARCHIVE = "agentledger/output.tar.gz"

INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
DEFAULT_CACHE_ROOT = "~/.cache/agentledger"
PR_SET_DUMPABLE = 4  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36
INSTALLED_MARKER = ".agentledger-installed"
TOOLS_MARKER = ".agentledger-tools-installed"  # generation.py's tools, installed completely
VENV_KEY_LENGTH = 24

MAX_JUNIT_FILES = 200
MAX_JUNIT_FILE_BYTES = 16 << 20

UPLOAD_TIMEOUT_S = 60
UPLOAD_ATTEMPTS = 3
UPLOAD_BACKOFF_S = 1.0
ERROR_BODY_BYTES = 300


class DriverError(Exception):
    """The driver itself cannot do its job (as opposed to the repository's commands failing)."""


def say(message: str) -> None:
    print(f"agentledger: {message}", flush=True)


# --- configuration -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    install: list[str]
    test: str
    timeout_s: int
    junit: list[str]
    jacoco: list[str]
    env: dict[str, str]
    virtualenv: bool
    cache_key_files: list[str]


def load_config(path: Path) -> Config:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DriverError(f"cannot read {CONFIG_FILE}: {error}") from error
    if not isinstance(document, dict):
        raise DriverError(f"{CONFIG_FILE} is not a JSON object")
    config = Config(
        install=document.get("install", []),
        test=document.get("test", ""),  # check_config names what is missing or wrong
        timeout_s=document.get("timeout_s", 0),
        junit=document.get("junit", []),
        jacoco=document.get("jacoco", []),
        env=document.get("env", {}),
        virtualenv=document.get("virtualenv", False),
        cache_key_files=document.get("cache_key_files", []),
    )
    check_config(config)
    return config


def check_config(config: Config) -> None:
    problems = []
    if not is_string_list(config.install):
        problems.append("install must be a list of strings")
    if not isinstance(config.test, str) or not config.test:
        problems.append("test must be a non-empty string")
    if isinstance(config.timeout_s, bool) or not isinstance(config.timeout_s, int) or config.timeout_s <= 0:
        problems.append("timeout_s must be a positive integer")
    if not is_string_list(config.junit):
        problems.append("junit must be a list of strings")
    if not is_string_list(config.jacoco):
        problems.append("jacoco must be a list of strings")
    if not isinstance(config.env, dict) or not is_string_list(list(config.env.values())):
        problems.append("env must map names to strings")
    if not isinstance(config.virtualenv, bool):
        problems.append("virtualenv must be a boolean")
    if not is_string_list(config.cache_key_files):
        problems.append("cache_key_files must be a list of strings")
    if problems:
        raise DriverError(f"invalid {CONFIG_FILE}: {'; '.join(problems)}")


def is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# --- running commands --------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # None when the command was killed at its deadline
    duration_s: float
    timed_out: bool

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0


def command_environment(config: Config, results: Path) -> dict[str, str]:
    """From scratch: the build's own variables (the output grant, AWS credentials, CODEBUILD_*)
    must never reach code from the repository."""
    environment = {name: os.environ[name] for name in INHERITED_VARIABLES if name in os.environ}
    # Package managers download into the build's cache, which CodeBuild keeps between builds;
    # a repository that declares its own location keeps it.
    cache = cache_root()
    environment.update({"PIP_CACHE_DIR": str(cache / "pip"), "npm_config_cache": str(cache / "npm"),
                        "MAVEN_OPTS": f"-Dmaven.repo.local={cache / 'm2'}"})
    environment.update(config.env)
    environment[RESULTS_VARIABLE] = str(results)
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def inside_venv(environment: dict[str, str], venv: Path) -> dict[str, str]:
    bin_dir = str(venv / "bin")
    path = environment.get("PATH")
    return {**environment, "PATH": f"{bin_dir}{os.pathsep}{path}" if path else bin_dir,
            "VIRTUAL_ENV": str(venv)}


def shell_argv(command: str, environment: dict[str, str]) -> list[str]:
    shell = shutil.which("bash", path=environment.get("PATH")) or "sh"
    return [shell, "-c", command]


def run_logged(argv: list[str], shown_as: str, environment: dict[str, str], cwd: Path,
               log_path: Path, timeout_s: int) -> Outcome:
    """Runs one command with its output appended to the log (a file, not a pipe, so nothing it
    leaves running can block us on a full or open pipe)."""
    with log_path.open("ab") as log:
        log.write(f"$ {shown_as}\n".encode("utf-8", "replace"))
        log.flush()
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=str(cwd), env=environment, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            outcome = finished(process.wait(timeout=timeout_s), started)
        except subprocess.TimeoutExpired:
            outcome = Outcome(exit_code=None, duration_s=seconds_since(started), timed_out=True)
        finally:
            # Also after a normal exit: whatever the command started in the background dies with it.
            kill_group(process.pid)
            kill_tree(os.getpid(), include_root=False)
            process.wait()
            reap_orphans()
        log.write(f"{footer(outcome, timeout_s)}\n".encode())
    return outcome


def finished(returncode: int, started: float) -> Outcome:
    # A signal death reads as the shell reports it, so the result does not depend on whether
    # bash exec'ed the command or ran it as a child.
    exit_code = 128 - returncode if returncode < 0 else returncode
    return Outcome(exit_code=exit_code, duration_s=seconds_since(started), timed_out=False)


def seconds_since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def become_subreaper() -> None:
    """What a command detaches (double fork, setsid) is re-parented to this driver instead of
    init, so it is still found among the driver's descendants and killed. And the driver is not
    dumpable: the commands run as its user, and its /proc files (the environment, with the build's
    grants) become readable by root only."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the process group kill is what remains


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat_file:
                fields = stat_file.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, pending = [], list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def kill_tree(root: int, include_root: bool = True) -> None:
    """Every process under `root`: stopped first, so none forks or detaches while the tree is
    walked, then killed. A process group kill misses what a command moved to a session of its own."""
    stopped = set()
    while True:
        fresh = [pid for pid in ([root] if include_root else []) + descendants(root) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            signal_quietly(pid, signal.SIGSTOP)
        stopped.update(fresh)
    for pid in stopped:
        signal_quietly(pid, signal.SIGKILL)


def signal_quietly(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)


def reap_orphans() -> None:
    """As a subreaper the driver inherits what its commands detached; their zombies are its own."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def footer(outcome: Outcome, timeout_s: int) -> str:
    return f"[agentledger: {describe(outcome, timeout_s)}]"


def describe(outcome: Outcome, timeout_s: int) -> str:
    if outcome.timed_out:
        return f"killed after the {timeout_s} s timeout"
    return f"exited {outcome.exit_code} in {outcome.duration_s:.2f} s"


@dataclass(frozen=True)
class Workspace:
    """The build's working directory, with absolute paths (commands run inside the repository)."""
    root: Path
    config: Config
    environment: dict[str, str]

    @property
    def repository(self) -> Path:
        return self.root / REPOSITORY_DIR

    @property
    def results(self) -> Path:
        return self.root / RESULTS_DIR

    @property
    def log(self) -> Path:
        return self.root / RAW_OUTPUT_FILE

    def run(self, command: str, environment: dict[str, str]) -> Outcome:
        return self.run_argv(shell_argv(command, environment), command, environment)

    def run_argv(self, argv: list[str], shown_as: str, environment: dict[str, str]) -> Outcome:
        return run_logged(argv, shown_as, environment, self.repository, self.log,
                          self.config.timeout_s)


# --- install -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class InstallResult:
    commands: int  # how many install commands ran (none on a cache hit)
    exit_code: int | None
    duration_s: float
    timed_out: bool
    cache_hit: bool | None  # None without a virtualenv: nothing is cached

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0


def install_without_cache(workspace: Workspace) -> InstallResult:
    started = time.monotonic()
    commands, outcome = run_install_commands(workspace, workspace.environment)
    return install_result(commands, outcome, started, cache_hit=None)


def install_into_venv(workspace: Workspace, venv: Path) -> InstallResult:
    """Two builds may share the cache: the lock makes one install while the other waits, then
    finds the marker."""
    started = time.monotonic()
    # The lock lies outside the venvs' directory, which a host may mount read-only but for this
    # build's own entry.
    locks = cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{venv.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / INSTALLED_MARKER).exists():
            say(f"dependencies cached (venv {venv.name}), not installing")
            return install_result(0, None, started, cache_hit=True)
        say(f"installing (cache miss for venv {venv.name})")
        shutil.rmtree(venv, ignore_errors=True)  # what a failed or killed install left
        created = create_venv(workspace, venv)
        if not created.succeeded:
            return install_result(0, created, started, cache_hit=False)
        commands, outcome = run_install_commands(workspace, inside_venv(workspace.environment, venv))
        if outcome is None or outcome.succeeded:
            (venv / INSTALLED_MARKER).touch()
        return install_result(commands, outcome, started, cache_hit=False)


def create_venv(workspace: Workspace, venv: Path) -> Outcome:
    argv = [sys.executable, "-m", "venv", str(venv)]
    return workspace.run_argv(argv, " ".join(argv), workspace.environment)


def run_install_commands(workspace: Workspace,
                         environment: dict[str, str]) -> tuple[int, Outcome | None]:
    """Runs the install commands up to the first that fails; returns how many ran and the last
    outcome (None when there was nothing to run)."""
    outcome = None
    for number, command in enumerate(workspace.config.install, start=1):
        say(f"install {number}/{len(workspace.config.install)}: {command}")
        outcome = workspace.run(command, environment)
        if not outcome.succeeded:
            return number, outcome
    return len(workspace.config.install), outcome


def install_result(commands: int, outcome: Outcome | None, started: float,
                   cache_hit: bool | None) -> InstallResult:
    return InstallResult(
        commands=commands,
        exit_code=0 if outcome is None else outcome.exit_code,
        duration_s=seconds_since(started),
        timed_out=outcome is not None and outcome.timed_out,
        cache_hit=cache_hit,
    )


def venv_path(config: Config, repository: Path) -> Path:
    return cache_root() / "venvs" / venv_name(config, repository)


def venv_name(config: Config, repository: Path) -> str:
    return cache_key(config, repository)[:VENV_KEY_LENGTH]


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_VARIABLE) or os.path.expanduser(DEFAULT_CACHE_ROOT))


def cache_key(config: Config, repository: Path) -> str:
    """What the installed venv depends on: the dependency files, how they are installed, and
    the interpreter the venv is made from."""
    files = [[name, file_digest(repository, name)] for name in sorted(config.cache_key_files)]
    document = {"files": files, "install": config.install, "python": sys.version}
    return hashlib.sha256(json.dumps(document).encode()).hexdigest()


def file_digest(repository: Path, name: str) -> str | None:
    """None for a file that is missing, outside the repository or not a regular file (reading a
    FIFO or /dev/zero that the repository points at would never end)."""
    path = contained_regular_file(repository, repository / name)
    return None if path is None else hashlib.sha256(path.read_bytes()).hexdigest()


def contained_regular_file(repository: Path, candidate: Path) -> Path | None:
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not resolved.is_relative_to(repository.resolve()) or not stat.S_ISREG(resolved.stat().st_mode):
        return None
    return resolved


# --- tests -------------------------------------------------------------------------------------

def run_tests(workspace: Workspace, venv: Path | None) -> Outcome:
    say(f"running tests: {workspace.config.test}")
    environment = workspace.environment
    if venv is not None:
        environment = {**inside_venv(environment, venv), "PYTHONPATH": working_copy_path(workspace)}
    outcome = workspace.run(workspace.config.test, environment)
    say(f"tests {describe(outcome, workspace.config.timeout_s)}")
    return outcome


def working_copy_path(workspace: Workspace) -> str:
    """The working copy shadows the copy of the project that the install put into the venv."""
    roots = [workspace.repository, workspace.repository / "src"]
    return os.pathsep.join(str(root) for root in roots if root.is_dir())


# --- results -----------------------------------------------------------------------------------

def collect_reports(workspace: Workspace, patterns: list[str], kind: str, directory: str) -> list[str]:
    """Keeps the reports the tests wrote into the results' directory and copies those the globs
    match. The commands' processes are dead by now, so nothing changes the tree while it is checked."""
    reports = workspace.results / directory
    reports.mkdir(parents=True, exist_ok=True)
    kept = keep_written_reports(reports)
    copied = set()
    for pattern in patterns:
        for source in glob_inside(workspace.repository, pattern, kind):
            if len(kept) >= MAX_JUNIT_FILES:
                say(f"more than {MAX_JUNIT_FILES} {kind} files, keeping the first")
                return sorted(kept)
            if source not in copied and within_report_size(source):
                copied.add(source)
                kept.append(copy_flat(source, workspace.repository.resolve(), reports))
    return sorted(kept)


def keep_written_reports(reports: Path) -> list[str]:
    """Only regular XML files within the limits stay (no symlinks: the upload must not carry
    links the orchestrator might follow)."""
    kept: list[str] = []
    for directory, _, names in os.walk(reports):
        for name in sorted(names):
            path = Path(directory) / name
            relative = path.relative_to(reports).as_posix()
            if (path.suffix == ".xml" and not path.is_symlink() and path.is_file()
                    and within_report_size(path) and len(kept) < MAX_JUNIT_FILES):
                kept.append(relative)
            else:
                path.unlink()
    return kept


def glob_inside(repository: Path, pattern: str, kind: str) -> list[Path]:
    """The regular files the pattern matches inside the repository, resolved; never a symlink
    and never a path outside it."""
    if not pattern or Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        say(f"ignoring {kind} glob {pattern!r}: not a pattern inside the repository")
        return []
    try:
        candidates = sorted(repository.glob(pattern))
    except ValueError as error:
        say(f"ignoring {kind} glob {pattern!r}: {error}")
        return []
    matches = []
    for match in candidates:
        resolved = None if match.is_symlink() else contained_regular_file(repository, match)
        if resolved is not None:
            matches.append(resolved)
    return matches


def within_report_size(path: Path) -> bool:
    return path.stat().st_size <= MAX_JUNIT_FILE_BYTES


def copy_flat(source: Path, repository: Path, junit: Path) -> str:
    stem = source.relative_to(repository).as_posix().replace("/", "__")
    name, number = stem, 1
    while (junit / name).exists():
        number += 1
        name = f"{Path(stem).stem}-{number}{Path(stem).suffix}"
    shutil.copyfile(source, junit / name)
    return name


def write_output_tail(log: Path, destination: Path) -> None:
    omitted = max(0, log.stat().st_size - OUTPUT_LIMIT_BYTES)
    with log.open("rb") as raw:
        raw.seek(omitted)
        tail = raw.read()
    note = f"[agentledger: output truncated, first {omitted} bytes omitted]\n" if omitted else ""
    destination.write_text(note + tail.decode("utf-8", errors="replace"), encoding="utf-8")


def write_result(results: Path, install: InstallResult, test: Outcome | None, command: str,
                 junit_files: list[str], coverage_files: list[str]) -> None:
    document = {
        "install": asdict(install),
        "test": None if test is None else {"command": command, **asdict(test)},
        "junit_files": junit_files,
        "coverage_files": coverage_files,
    }
    (results / RESULT_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


# --- commands ----------------------------------------------------------------------------------

def run_install() -> int:
    become_subreaper()
    root = Path.cwd()
    config = load_config(root / CONFIG_FILE)
    results = root / RESULTS_DIR
    (results / JUNIT_DIR).mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root=root, config=config, environment=command_environment(config, results))
    workspace.log.touch()

    venv = venv_path(config, workspace.repository) if config.virtualenv else None
    if venv is not None:
        result = install_into_venv(workspace, venv)
    else:
        say("installing (no cache)" if config.install else "nothing to install")
        result = install_without_cache(workspace)
    (root / INSTALL_RESULT_FILE).write_text(json.dumps(asdict(result)) + "\n", encoding="utf-8")
    say(f"wrote {INSTALL_RESULT_FILE}")
    return 0


def run_suite() -> int:
    become_subreaper()
    root = Path.cwd()
    config = load_config(root / CONFIG_FILE)
    results = root / RESULTS_DIR
    workspace = Workspace(root=root, config=config, environment=command_environment(config, results))
    install_result = load_install_result(root / INSTALL_RESULT_FILE)
    venv = venv_path(config, workspace.repository) if config.virtualenv else None
    generating = (root / GENERATION_REQUEST_FILE).is_file()
    if not install_result.succeeded:
        outcome = None
        say("install failed, not running the tests")
    elif generating:
        outcome = generation_module().run(workspace, venv)
    else:
        outcome = run_tests(workspace, venv)

    junit_files = collect_reports(workspace, config.junit, "JUnit", JUNIT_DIR)
    say(f"collected {len(junit_files)} JUnit file(s)")
    coverage_files = collect_reports(workspace, config.jacoco, "JaCoCo", COVERAGE_DIR) if config.jacoco else []
    if config.jacoco:
        say(f"collected {len(coverage_files)} JaCoCo report(s)")
    write_output_tail(workspace.log, results / OUTPUT_FILE)
    write_result(results, install_result, outcome, config.test, junit_files, coverage_files)
    say(f"wrote {RESULTS_DIR}/{RESULT_FILE}")
    return 0


def generation_module() -> Any:
    """generation.py, shipped next to this file: imported only by a build that generates tests."""
    if __package__:  # imported as agentledger.testrun.driver: the orchestrator's tests
        from agentledger.testrun import generation
    else:  # inside the build
        import generation  # type: ignore[import-not-found, no-redef]
    return generation


def install_tools() -> int:
    """agentledger's own tools, for a build that generates tests (before any repository command
    runs, in a phase of its own: the host lets only this phase write the tools' cache)."""
    root = Path.cwd()
    if not (root / GENERATION_REQUEST_FILE).is_file():
        return 0
    become_subreaper()
    config = load_config(root / CONFIG_FILE)
    results = root / RESULTS_DIR
    (results / JUNIT_DIR).mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root=root, config=config, environment=command_environment(config, results))
    workspace.log.touch()
    return int(generation_module().install_tools(workspace))


def load_install_result(path: Path) -> InstallResult:
    try:
        return InstallResult(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as error:
        raise DriverError(f"cannot read {INSTALL_RESULT_FILE} (did `install` run?): {error}") from error


def print_cache_key() -> int:
    config = load_config(Path.cwd() / CONFIG_FILE)
    if config.virtualenv:
        print(venv_name(config, Path.cwd() / REPOSITORY_DIR))
    return 0


def upload() -> int:
    root = Path.cwd()
    grant = load_grant()
    archive = make_archive(root / RESULTS_DIR, root / OUTPUT_ARCHIVE)
    size = archive.stat().st_size
    if size > OUTPUT_ARCHIVE_LIMIT_BYTES:
        raise DriverError(f"{OUTPUT_ARCHIVE} is {size} bytes, over the {OUTPUT_ARCHIVE_LIMIT_BYTES} byte limit")
    say(f"uploading {OUTPUT_ARCHIVE} ({size} bytes)")
    boundary = secrets.token_hex(16)
    body = multipart_body(grant["fields"], archive.read_bytes(), boundary)
    status = post_with_retries(grant["url"], body, boundary)
    say(f"uploaded (HTTP {status})")
    return 0


def load_grant() -> dict[str, Any]:
    try:
        grant = json.loads(os.environ[OUTPUT_GRANT_VARIABLE])
    except KeyError:
        raise DriverError(f"{OUTPUT_GRANT_VARIABLE} is not set") from None
    except ValueError as error:
        raise DriverError(f"{OUTPUT_GRANT_VARIABLE} is not JSON: {error}") from error
    if not (isinstance(grant, dict) and isinstance(grant.get("url"), str)
            and isinstance(grant.get("fields"), dict)):
        raise DriverError(f"{OUTPUT_GRANT_VARIABLE} must hold a url and fields")
    return grant


def make_archive(results: Path, archive: Path) -> Path:
    if not results.is_dir():
        raise DriverError(f"{RESULTS_DIR} does not exist: nothing to upload")
    with tarfile.open(archive, "w:gz") as tar:
        for entry in sorted(results.iterdir()):
            tar.add(entry, arcname=entry.name, filter=only_files_and_directories)
    return archive


def only_files_and_directories(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    # The tests could have written links or devices into the results; they do not leave the build.
    return member if member.isfile() or member.isdir() else None


def multipart_body(fields: dict[str, Any], content: bytes, boundary: str) -> bytes:
    """The presigned POST's fields in their order, then the file: S3 ignores fields after it."""
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     f"{value}\r\n".encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="output.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n'.encode())
    parts.append(content)
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(parts)


def post_with_retries(url: str, body: bytes, boundary: str) -> int:
    """Retries what may pass on a second try (connection errors, 5xx), never a refusal."""
    for attempt in range(1, UPLOAD_ATTEMPTS):
        try:
            return post(url, body, boundary)
        except TransientUploadError as error:
            say(f"upload attempt {attempt} failed ({error}), retrying")
            time.sleep(UPLOAD_BACKOFF_S * attempt)
    return post(url, body, boundary)


class TransientUploadError(DriverError):
    pass


def post(url: str, body: bytes, boundary: str) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=UPLOAD_TIMEOUT_S) as response:
            return response.status
    except urllib.error.HTTPError as error:
        answer = error.read()[:ERROR_BODY_BYTES].decode("utf-8", "replace")
        failure = TransientUploadError if error.code >= 500 else DriverError
        raise failure(f"upload refused: HTTP {error.code}: {answer}") from error
    except OSError as error:  # URLError, timeouts, resets: the answer never came
        raise TransientUploadError(f"upload failed: {error}") from error


COMMANDS = {"tools": install_tools, "install": run_install, "test": run_suite, "upload": upload,
            "cache-key": print_cache_key}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: driver.py {'|'.join(COMMANDS)}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]]()
    except (DriverError, OSError) as error:
        print(f"agentledger: {argv[0]}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
