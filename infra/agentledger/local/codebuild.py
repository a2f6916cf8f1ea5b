"""CodeBuild, locally: moto records `start_build` and runs nothing (and reports every build
SUCCEEDED); the local runtime runs the project's buildspec for real, each phase in a sandbox
(infra/agentledger/local/sandbox.py says what the sandbox is). (moto also asks a NO_SOURCE project for a
source location, which CodeBuild does not.)

A build here gets:
- a fresh, empty working directory (CODEBUILD_SRC_DIR) on a tmpfs of its own, size-capped, gone
  when the build ends;
- an environment holding nothing of this machine's but PATH, HOME and locale, plus the variables
  the buildspec declares and the build was started with: no AWS_* variable, no table or bucket
  name, no token (the stack's functions run with those; a build never does);
- uid 65534, namespaces of its own, the host read-only and its home, /tmp and serve's credentials
  hidden; the package index and the S3 endpoint's port, no other port of this machine;
- limits on CPU time, memory, processes and file size (`prlimit`), and its timeout;
- every process it started killed when a phase ends, for any reason, including the runtime
  stopping (the phase's pid namespace ends).
The dependency cache lives wherever serve is told (AGENTLEDGER_BUILD_CACHE) and is seen inside the
sandbox at the path the buildspec declares, as on CodeBuild. It holds virtualenvs, an entry per
repository and dependencies, named by the orchestrator's key (AGENTLEDGER_CACHE_KEY, a variable the
build was started with) and this interpreter, never by anything the build says; the install phase
may write the one entry its key names, and only when it is missing; every other phase, the tests'
included, sees the cache read-only; agentledger's own tools are written only in the first phase,
before any of the repository's commands runs. Package managers' downloads are each build's own.

Each build's code runs as a uid of its own (CODE_UIDS), in control groups of its own where this
machine allows (cgroups.py): one build's processes and memory never count against another's.

With `unsafe=True` (serve's --unsafe-local-builds) a build is a plain subprocess of serve's user
instead, and says so in its log and on serve's output.
"""
from __future__ import annotations

import fcntl
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moto.codebuild.models import CodeBuildBackend, codebuild_backends
from moto.core.exceptions import JsonRESTError
from moto.core.utils import iso_8601_datetime_with_milliseconds
from moto.ssm.models import ssm_backends

from agentledger.adapters.codebuild import BUILD_STATE_CHANGE
from agentledger.buildkit.install import entry_name
from agentledger.buildkit.layout import (
    CACHE_KEY_VARIABLE,
    CACHE_VARIABLE,
    CODE_UID_VARIABLE,
    INSTALLED_MARKER,
    TEST_RUN_VARIABLE,
    TOOLS_DIR,
    TOOLS_MARKER,
    VENVS_DIR,
)
from agentledger.buildkit.processes import kill_tree
from agentledger.hidden_text import printable

from .cgroups import BuildGroupFactory, BuildGroups
from .profiles import local_credentials_dir
from .sandbox import (
    BuildRoom,
    Mount,
    SandboxedProcess,
    SandboxError,
    SandboxSpec,
    interpreter_mounts,
    sandbox_path,
    sandbox_problem,
    without_paths,
)
from .seccomp import build_filter

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from moto.codebuild.responses import CodeBuildResponse
    from moto.events.utils import EventMessageType

PHASES = ("install", "pre_build", "build", "post_build")
LOG_TAIL_BYTES = 64 << 10
INSTALL_PHASE = "pre_build"  # the buildspec's phase that runs the kit's `install`
TOOLS_PHASE = "install"  # the buildspec's phase that runs the kit's `prepare`: no repository command runs in it
TOOLS_LOCK = "tools"
CACHE_KEY = re.compile(r"[0-9a-f]{64}")
# What builds see of this machine's environment: the rest is the buildspec's and the build's own.
INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
# The uids builds' code runs as, one per build running: no user of this machine has one (far above
# the ranges distributions and /etc/subuid hand out), so a build owns nothing outside its room.
CODE_UIDS = range(3_000_000_000, 3_000_100_000)
BUILD_USER = "agentledger-build"
# Hidden like the home (which holds the cache's path the buildspec declares, /root/.cache/...) when
# serve's HOME is elsewhere.
ROOT_HOME = Path("/root")
UNSAFE_WARNING = ("agentledger: UNSAFE: this build runs without a sandbox (--unsafe-local-builds): the code under "
                  "test runs as serve's user, sees this machine's files and processes and can reach every local port")


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 3600
    memory_bytes: int = 8 << 30  # address space: Node and the JVM reserve far more than they use
    build_memory_bytes: int = 6 << 30  # what all of one build's processes may hold at once (its control group)
    processes: int = 4096
    file_bytes: int = 2 << 30
    disk_bytes: int = 2 << 30  # the build directory's tmpfs: every byte the build writes, its log too
    tmp_bytes: int = 256 << 20  # each of its private /tmp, /dev/shm and home
    # Below serve's own priority: on AWS a build has a machine of its own; here it shares serve's
    # cores, and at full load (fifty runs' builds) the API's answers waited over a minute behind them.
    niceness: int = 10

    def options(self) -> list[str]:
        return [f"--cpu={self.cpu_seconds}", f"--as={self.memory_bytes}", f"--nproc={self.processes}",
                f"--fsize={self.file_bytes}"]

    def prefix(self) -> list[str]:
        """The command that starts a phase's script under these limits."""
        return ["nice", "-n", str(self.niceness), "prlimit", *self.options(), "--"]


@dataclass
class LocalBuild:
    build_id: str
    project: str
    record: dict[str, Any]  # moto's build metadata, which batch_get_builds returns
    variables: dict[str, str]
    timeout_s: int
    process: _Phase | None = None
    stopped: bool = False
    log_tail: str = ""
    missing_parameters: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


class LocalCodeBuild:
    def __init__(self, work_root: Path, cache_dir: Path, limits: SandboxLimits | None = None,
                 concurrency: int = 2, unsafe: bool = False) -> None:
        self.work_root = work_root
        self.cache_dir = cache_dir
        self.limits = limits or SandboxLimits()
        self.unsafe = unsafe
        # The one port of this machine a sandboxed build reaches: the S3 endpoint's, set by the
        # runtime once the endpoint listens (forward_port).
        self.forwarded_port: int | None = None
        self._installing: dict[str, threading.Lock] = {}  # one install per cache entry at a time
        # The tools' entries this runner made root's: read-only to every build since, so never walked
        # again. Held here, not per build: each build's phase would otherwise walk every kept entry.
        self.kept_tools: set[str] = set()
        self._uids_in_use: set[int] = set()
        self.groups = BuildGroupFactory()
        if self.groups.problem is not None and not unsafe:
            print(f"agentledger: builds run without control groups of their own ({self.groups.problem}): each still "
                  "has a uid of its own, but their memory is bounded per process only", file=sys.stderr, flush=True)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="local-codebuild")
        self._builds: dict[str, LocalBuild] = {}
        self._lock = threading.Lock()
        self._admitting = threading.Lock()  # a project's limit is checked and a build added at once
        # A project's concurrent build limit (its ConcurrentBuildLimit), set once it is deployed;
        # moto keeps no such field.
        self.build_limits: dict[str, int] = {}
        # Where a build's end is announced, as CodeBuild sends its state-change event to EventBridge.
        self.on_ended: Callable[[EventMessageType], None] | None = None

    # -- what tests and people look at ------------------------------------------------------
    def builds_for(self, run_id: str, stage: str = "verify") -> list[LocalBuild]:
        """The builds started for one run's stage: verify's run the suite, execute's write tests
        (their marker says which: "<run id>/<digest>#n", "<run id>/execute/<digest>#n")."""
        with self._lock:
            return [b for b in self._builds.values() if _stage_of(b.variables.get(TEST_RUN_VARIABLE, ""), run_id)
                    == stage]

    def wait(self, build_id: str, timeout_s: float) -> bool:
        return self._builds[build_id].done.wait(timeout_s)

    def forward_port(self, port: int) -> None:
        self.forwarded_port = port

    # -- what moto_seams puts in place of moto's CodeBuild ----------------------------------
    def build_starter(self, runs_project: Callable[[str], bool], elsewhere: Callable[[CodeBuildResponse], Any],
                      in_moto: Callable[[CodeBuildResponse], Any]) -> Callable[[CodeBuildResponse], Any]:
        """`CodeBuildResponse.start_build`: the builds of the projects `runs_project` claims are
        recorded `in_moto` and run here; any other project's builds go `elsewhere`, to whatever
        handled them before (another runner, or moto), so runners nest."""
        def start_build(response: CodeBuildResponse) -> Any:
            name = response._get_param("projectName")
            if not runs_project(name):
                return elsewhere(response)
            with self._admitting:
                self._admit(name)
                result = in_moto(response)
                backend: CodeBuildBackend = codebuild_backends[response.current_account][response.region]
                record = backend.build_metadata[name].build_metadata
                self._submit(backend, name, record, response)
            return result

        return start_build

    def build_stopper(self, elsewhere: Callable[..., dict[str, Any] | None]) -> Callable[..., dict[str, Any] | None]:
        """`CodeBuildBackend.stop_build`: this runner's builds are stopped here; any other goes
        `elsewhere`."""
        def stop_build(backend: CodeBuildBackend, build_id: str) -> dict[str, Any] | None:
            build = self._builds.get(build_id)
            if build is None:
                return elsewhere(backend, build_id)
            self._stop(build)
            return build.record

        return stop_build

    def shutdown(self) -> None:
        with self._lock:
            running = [b for b in self._builds.values() if not b.done.is_set()]
        for build in running:
            self._stop(build)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _admit(self, project: str) -> None:
        """As CodeBuild does for a project with a concurrent build limit: a build past it is
        refused, not queued (a project without one queues, up to the account's limit)."""
        limit = self.build_limits.get(project)
        if limit is None:
            return
        with self._lock:
            running = sum(1 for build in self._builds.values() if build.project == project and not build.done.is_set())
        if running >= limit:
            raise JsonRESTError("AccountLimitExceededException",
                                f"Cannot have more than {limit} builds running for the project {project}")

    # -- one build ---------------------------------------------------------------------------
    def _submit(self, backend: CodeBuildBackend, project_name: str, record: dict[str, Any],
                response: CodeBuildResponse) -> None:
        project = backend.codebuild_projects[project_name].project_metadata
        environment = dict(project.get("environment") or {})
        declared = {v["name"]: v for v in environment.get("environmentVariables", [])}
        overrides = {v["name"]: v for v in response._get_param("environmentVariablesOverride") or []}
        timeout_minutes = response._get_param("timeoutInMinutesOverride") or project.get("timeoutInMinutes") or 60
        # As CodeBuild returns them: a PARAMETER_STORE variable's value is the parameter's name.
        listed = [{"type": "PLAINTEXT", **v} for v in {**declared, **overrides}.values()]
        environment.update(
            image=response._get_param("imageOverride") or environment.get("image"),
            computeType=response._get_param("computeTypeOverride") or environment.get("computeType"),
            environmentVariables=listed,
        )
        buildspec = _parse_buildspec(project["source"].get("buildspec", ""))
        record.update(environment=environment, timeoutInMinutes=timeout_minutes, currentPhase="QUEUED",
                      buildStatus="IN_PROGRESS", phases=[], logs={"groupName": f"/aws/codebuild/{project_name}"})
        record.pop("endTime", None)
        variables, missing = _resolve(listed, response.current_account, response.region)
        build = LocalBuild(record["id"], project_name, record, variables, int(timeout_minutes) * 60,
                           missing_parameters=missing)
        with self._lock:
            self._builds[build.build_id] = build
        self._pool.submit(self._run, build, buildspec)

    def _run(self, build: LocalBuild, buildspec: dict[str, Any]) -> None:
        self.work_root.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + build.timeout_s
        status = "SUCCEEDED"
        try:
            if build.missing_parameters:  # CodeBuild fails such a build before any phase runs
                raise SandboxError(f"parameter does not exist: {', '.join(build.missing_parameters)}")
            with self._place(build) as place, place.log_path.open("wb") as log:
                if self.unsafe:
                    log.write(f"{UNSAFE_WARNING}\n".encode())
                    print(f"{UNSAFE_WARNING} ({build.build_id})", file=sys.stderr, flush=True)
                env = self._environment(build, buildspec, place)
                try:
                    for phase in PHASES:
                        commands = (buildspec.get("phases", {}).get(phase) or {}).get("commands") or []
                        # CodeBuild: a failed build phase still runs post_build; a failed install or
                        # pre_build ends the build.
                        if not commands or (status != "SUCCEEDED" and phase != "post_build"):
                            continue
                        phase_status = self._run_phase(build, place, phase, commands, env, log, deadline)
                        if phase_status != "SUCCEEDED" and status == "SUCCEEDED":
                            status = phase_status
                        if phase_status in ("TIMED_OUT", "STOPPED"):
                            break
                finally:  # what the phases (and bwrap, should it fail) wrote, before the room goes
                    log.flush()
                    build.log_tail = _tail(place.log_path)
        except SandboxError as error:
            build.log_tail += f"\n[Container] the build's sandbox failed: {error}\n"
            status = "FAILED"
        except Exception as error:  # noqa: BLE001 — whatever broke, the build did not succeed
            # A build is SUCCEEDED only when every phase said so: an error of the runner itself
            # (a fork refused under load, a wait that timed out) must not read as a passed build.
            build.log_tail += f"\n[Container] the build runner failed: {type(error).__name__}: {error}\n"
            where = traceback.extract_tb(error.__traceback__)[-1]
            print(printable(f"agentledger: local build {build.build_id} failed in the runner: {type(error).__name__}: "
                            f"{error} ({Path(where.filename).name}:{where.lineno})"), file=sys.stderr, flush=True)
            status = "FAILED"
        finally:
            build.record.update(buildStatus="STOPPED" if build.stopped else status, currentPhase="COMPLETED",
                                endTime=iso_8601_datetime_with_milliseconds(), buildComplete=True)
            build.done.set()
            if self.on_ended is not None:
                self.on_ended(state_change_event(build.record))

    @contextmanager
    def _place(self, build: LocalBuild) -> Iterator[_Place]:
        if self.unsafe:
            directory = Path(tempfile.mkdtemp(prefix="build-", dir=self.work_root))
            try:
                yield _Unsandboxed(directory, self.limits, self.cache_dir)
            finally:
                shutil.rmtree(directory, ignore_errors=True)
                directory.with_suffix(".log").unlink(missing_ok=True)
            return
        problem = sandbox_problem()
        if problem:
            raise SandboxError(problem)
        with self._code_uid() as uid, self._groups(build) as groups:
            room = BuildRoom(Path(tempfile.mkdtemp(prefix="build-", dir=self.work_root)), self.limits.disk_bytes)
            try:
                yield _Sandboxed(self, room, uid, groups)
            finally:
                room.close()

    @contextmanager
    def _code_uid(self) -> Iterator[int]:
        """A uid no other build of this runner's has while this one runs (two serves may draw the
        same one now and then: their builds still share no file and see none of each other's processes)."""
        with self._lock:
            uid = random.choice(CODE_UIDS)
            while uid in self._uids_in_use:
                uid = random.choice(CODE_UIDS)
            self._uids_in_use.add(uid)
        try:
            yield uid
        finally:
            with self._lock:
                self._uids_in_use.discard(uid)

    @contextmanager
    def _groups(self, build: LocalBuild) -> Iterator[BuildGroups | None]:
        if self.groups.problem is not None:
            yield None
            return
        groups = self.groups.make(build.build_id.rsplit(":", 1)[-1], self.limits.build_memory_bytes,
                                  self.limits.processes)
        try:
            yield groups
        finally:
            groups.remove()

    def _environment(self, build: LocalBuild, buildspec: dict[str, Any], place: _Place) -> dict[str, str]:
        host = getattr(os.environ, "process_env", os.environ)  # not a function's invocation view
        env = {name: host[name] for name in INHERITED_VARIABLES if name in host}
        env.update({k: str(v) for k, v in (buildspec.get("env", {}).get("variables") or {}).items()})
        env.update(build.variables)
        env.update(place.host_variables(env))
        env.update(CODEBUILD_BUILD_ID=build.build_id, CODEBUILD_SRC_DIR=str(place.directory))
        return env

    def _run_phase(self, build: LocalBuild, place: _Place, phase: str, commands: list[str],
                   env: dict[str, str], log: Any, deadline: float) -> str:
        build.record["currentPhase"] = phase.upper()
        started = iso_8601_datetime_with_milliseconds()
        log.write(f"[Container] Entering phase {phase.upper()}\n".encode())
        log.flush()
        script = "set -e\n" + "\n".join(commands) + "\n"
        if build.stopped:
            return "STOPPED"
        context = None
        try:
            with place.phase(phase, env) as mounts:
                build.process = place.start(script, env, mounts, log)
                try:
                    exit_code = build.process.wait(timeout=max(0.0, deadline - time.monotonic()))
                    status = "STOPPED" if build.stopped else ("SUCCEEDED" if exit_code == 0 else "FAILED")
                    if status == "FAILED":
                        context = {"statusCode": "COMMAND_EXECUTION_ERROR",
                                   "message": f"Error while executing the {phase} phase's commands. "
                                              f"Reason: exit status {exit_code}"}
                except subprocess.TimeoutExpired:
                    status = "TIMED_OUT"
                finally:
                    build.process.kill()
        except (SandboxError, OSError) as error:
            # The phase never ran: said in the build's log and in its record, as CodeBuild says why a
            # build could not start (without this machine's paths, which are no build's business).
            print(f"agentledger: local build {build.build_id}: the {phase} phase could not start: {error}",
                  file=sys.stderr, flush=True)
            reason = f"the build's sandbox could not start the {phase} phase: {without_paths(str(error))}"
            log.write(f"[Container] {reason}\n".encode())
            status, context = "FAILED", {"statusCode": "CLIENT_ERROR", "message": reason}
        log.write(f"[Container] Phase {phase.upper()} {status}\n".encode())
        build.record["phases"].append({"phaseType": phase.upper(), "phaseStatus": status, "startTime": started,
                                       "endTime": iso_8601_datetime_with_milliseconds(),
                                       **({"contexts": [context]} if context else {})})
        return status

    def _stop(self, build: LocalBuild) -> None:
        build.stopped = True
        if build.process is not None:
            build.process.kill()

    @contextmanager
    def _install_lock(self, name: str) -> Iterator[None]:
        """One install per cache entry at a time: among this runtime's builds, and among every
        process that shares the cache (two `serve`s, a test suite's workers): an install clears
        what an unfinished one left, which must never be another process's install in progress."""
        with self._lock:
            lock = self._installing.setdefault(name, threading.Lock())
        locks = self.cache_dir / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with lock, (locks / f"{name}.lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
            yield


class _Phase(ABC):
    """A running phase, sandboxed or not: waited for, and killed with everything it started."""

    @abstractmethod
    def wait(self, timeout: float) -> int:
        """The phase's exit code once it ends; subprocess.TimeoutExpired if it runs past `timeout`."""

    @abstractmethod
    def kill(self) -> None:
        """Ends the phase and everything it started."""


class _Place(ABC):
    """Where a build's phases run: its directory, its log, and how a phase is started."""
    directory: Path
    log_path: Path

    @contextmanager
    def phase(self, phase: str, env: dict[str, str]) -> Iterator[list[Mount]]:
        yield []

    @abstractmethod
    def host_variables(self, env: dict[str, str]) -> dict[str, str]:
        """What the host declares to the build beside the buildspec's and the build's variables."""

    @abstractmethod
    def start(self, script: str, env: dict[str, str], mounts: list[Mount], log: Any) -> _Phase:
        """Starts the phase's script with the environment and the extra mounts."""


class _SubprocessPhase(_Phase):
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        _end_process_tree(self.process)


class _Unsandboxed(_Place):
    """--unsafe-local-builds: serve's user, this machine's filesystem and network, a process-tree kill."""

    def __init__(self, directory: Path, limits: SandboxLimits, cache_dir: Path) -> None:
        self.directory, self.log_path, self.limits = directory, directory.with_suffix(".log"), limits
        self.cache_dir = cache_dir

    def host_variables(self, env: dict[str, str]) -> dict[str, str]:
        return {CACHE_VARIABLE: str(self.cache_dir)}  # no mounts: the cache is where it lies

    def start(self, script: str, env: dict[str, str], mounts: list[Mount], log: Any) -> _Phase:
        return _SubprocessPhase(subprocess.Popen(
            [*self.limits.prefix(), "bash", "-c", script], cwd=self.directory, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))


class _SandboxedPhase(_Phase):
    def __init__(self, sandboxed: SandboxedProcess) -> None:
        self.sandboxed = sandboxed

    def wait(self, timeout: float) -> int:
        return self.sandboxed.wait(timeout)

    def kill(self) -> None:
        self.sandboxed.kill()


class _Sandboxed(_Place):
    def __init__(self, runner: LocalCodeBuild, room: BuildRoom, code_uid: int, groups: BuildGroups | None) -> None:
        self.runner, self.room, self.code_uid = runner, room, code_uid
        self.directory = room.source
        # In the room: bounded by its size, and out of the build's sight (only src is bound).
        self.log_path = room.host_view(room.path / "build.log")
        home = Path.home()
        # Hidden: every serve's profiles, and the cache where it lies on this machine (the build sees
        # the cache at the buildspec's path, as the mounts below make it).
        hidden = tuple(path for path in (local_credentials_dir(), runner.cache_dir, ROOT_HOME)
                       if path.exists() and path != home)
        self.spec = SandboxSpec(room=room, home=home, hidden=hidden, toolchain=interpreter_mounts(home),
                                tmp_bytes=runner.limits.tmp_bytes, limits=tuple(runner.limits.prefix()),
                                seccomp=build_filter(), files=_identity_files(code_uid),
                                prefix=tuple(groups.join_prefix()) if groups else ())
        self.venvs = runner.cache_dir / VENVS_DIR
        self.tools = runner.cache_dir / TOOLS_DIR

    def host_variables(self, env: dict[str, str]) -> dict[str, str]:
        return {CODE_UID_VARIABLE: str(self.code_uid), "PATH": sandbox_path(env.get("PATH", ""), self.spec.home)}

    @contextmanager
    def phase(self, phase: str, env: dict[str, str]) -> Iterator[list[Mount]]:
        """The cache as the phase sees it, at the buildspec's path: the build's own scratch there,
        the shared virtualenvs and tools over it read-only, and writable only the tools in the
        first phase (no command of the repository's has run yet), and for the install phase on a
        miss the one entry the orchestrator's key names. An entry is kept only if the install
        marked it installed; then it is made root's, so no later build's uid can change it."""
        self.venvs.mkdir(parents=True, exist_ok=True)
        self.tools.mkdir(parents=True, exist_ok=True)
        cache = Path(env[CACHE_VARIABLE])
        mounts = [Mount(self.room.cache, cache, writable=True), Mount(self.venvs, cache / VENVS_DIR, writable=False)]
        if phase == TOOLS_PHASE:
            with self._tools_installing():
                kept = [Mount(self.tools / name, cache / TOOLS_DIR / name, writable=False)
                        for name in sorted(self.runner.kept_tools) if (self.tools / name).is_dir()]
                yield [*mounts, Mount(self.tools, cache / TOOLS_DIR, writable=True), *kept]
            return
        mounts.append(Mount(self.tools, cache / TOOLS_DIR, writable=False))
        key = env.get(CACHE_KEY_VARIABLE, "")
        if phase != INSTALL_PHASE or not CACHE_KEY.fullmatch(key):
            yield mounts
            return
        # The interpreter the sandbox runs (sandbox_path puts it first), where the build sees the cache.
        name = entry_name(key, sys.version, cache)
        with self.runner._install_lock(name):
            entry = self.venvs / name
            if (entry / INSTALLED_MARKER).exists():
                yield mounts
                return
            shutil.rmtree(entry, ignore_errors=True)  # what a failed or killed install left
            entry.mkdir()
            try:
                yield [*mounts, Mount(entry, cache / VENVS_DIR / name, writable=True)]
            finally:
                if (entry / INSTALLED_MARKER).exists():
                    _make_root_owned(entry)
                else:
                    shutil.rmtree(entry, ignore_errors=True)

    @contextmanager
    def _tools_installing(self) -> Iterator[None]:
        """agentledger's own tools (named by their pins, shared by every repository) are written only
        in the phase where nothing of the repository's runs, one build at a time; what a finished
        install marked is kept, root's, and what an unfinished one left is removed. A kept entry is
        mounted read-only even in that phase, so it is made root's once, not walked (thousands of
        files: Pynguin's venv) before and after every generation build."""
        with self.runner._install_lock(TOOLS_LOCK):
            self._keep_finished_tools()
            try:
                yield
            finally:
                self._keep_finished_tools()

    def _keep_finished_tools(self) -> None:
        entries = list(self.tools.iterdir())
        kept = self.runner.kept_tools
        kept &= {entry.name for entry in entries}  # another serve may have cleaned the cache
        for entry in entries:
            if entry.name in kept:
                continue
            if (entry / TOOLS_MARKER).exists():
                _make_root_owned(entry)
                kept.add(entry.name)
            else:
                shutil.rmtree(entry, ignore_errors=True)

    def start(self, script: str, env: dict[str, str], mounts: list[Mount], log: Any) -> _Phase:
        return _SandboxedPhase(SandboxedProcess(self.spec, script, env, mounts, self.runner.forwarded_port,
                                                network=True, stdout=log))


def _identity_files(code_uid: int) -> tuple[tuple[str, bytes], ...]:
    """/etc/passwd and /etc/group as the sandbox sees them: this machine's, and the build's uid under
    a name (a JVM asks for its user's home, and a tool may refuse a uid with no name)."""
    files = []
    for path, line in (("/etc/passwd", f"{BUILD_USER}:x:{code_uid}:{code_uid}::/nonexistent:/usr/sbin/nologin\n"),
                       ("/etc/group", f"{BUILD_USER}:x:{code_uid}:\n")):
        host = Path(path).read_bytes() if Path(path).is_file() else b""
        files.append((path, host.rstrip(b"\n") + b"\n" + line.encode()))
    return tuple(files)


def build_cache_problem(cache_dir: Path) -> str | None:
    """Why serve cannot keep its builds' dependency cache at `cache_dir`, or None. Anywhere this
    user may write will do: builds see it at the buildspec's path, not where it lies."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache_dir):
            pass
    except OSError as error:
        return f"cannot keep the build cache at {cache_dir} (AGENTLEDGER_BUILD_CACHE): {error.strerror or error}"
    return None


def batch_get_builds(backend: CodeBuildBackend, ids: list[str]) -> list[dict[str, Any]]:
    """`CodeBuildBackend.batch_get_builds`: the records as the sandbox keeps them, instead of
    moto's "every build SUCCEEDED"."""
    return [build for history in backend.build_metadata_history.values() for build in history
            if build["id"] in ids]


def source_check(previous: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """The check of a project's source (moto's `_validate_required_params_source`, `previous`) as
    CodeBuild makes it: CodeBuild takes a NO_SOURCE project without a location (its buildspec is
    inline); moto asks every project for one."""
    def validate_source(source: dict[str, Any]) -> None:
        if source.get("type") != "NO_SOURCE":
            previous(source)

    return validate_source


def state_change_event(record: dict[str, Any]) -> EventMessageType:
    """The EventBridge event CodeBuild sends when a build ends (the fields the stack's rule and
    BuildEndedFunction read, and the envelope every event has)."""
    arn = record["arn"]
    _, _, _, region, account, _ = arn.split(":", 5)
    return {"version": "0", "id": str(uuid.uuid4()), "detail-type": BUILD_STATE_CHANGE, "source": "aws.codebuild",
            "account": account, "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "region": region,
            "resources": [arn],
            "detail": {"build-status": record["buildStatus"], "project-name": record["projectName"],
                       "build-id": arn, "current-phase": "COMPLETED", "version": "1",
                       "additional-information": {"build-complete": True, "start-time": str(record.get("startTime")),
                                                  "end-time": record.get("endTime")}}}


def _stage_of(marker: str, run_id: str) -> str | None:
    if not marker.startswith(f"{run_id}/"):
        return None
    rest = marker.removeprefix(f"{run_id}/")
    return rest.split("/", 1)[0] if "/" in rest.split("#", 1)[0] else "verify"


def _make_root_owned(tree: Path) -> None:
    for directory, names, files in os.walk(tree):
        os.chown(directory, 0, 0, follow_symlinks=False)
        for name in names + files:
            os.chown(Path(directory) / name, 0, 0, follow_symlinks=False)


def _end_process_tree(process: subprocess.Popen[bytes]) -> None:
    """Whatever the build left running (servers, `sleep 300 &`, a suite the driver moved to a
    session of its own) dies with it: CodeBuild ends the container, this ends the process tree."""
    kill_tree(process.pid)
    process.wait()


def _parse_buildspec(text: str) -> dict[str, Any]:
    """CDK writes BuildSpec.from_object as JSON (YAML's subset); a YAML buildspec is not expected."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the local CodeBuild reads JSON buildspecs only: {error}") from error
    if not isinstance(spec, dict) or str(spec.get("version")) != "0.2":
        raise ValueError("the local CodeBuild runs buildspec version 0.2 only")
    return spec


def _resolve(variables: list[dict[str, str]], account: str, region: str) -> tuple[dict[str, str], list[str]]:
    """A build's variables as its commands see them, PARAMETER_STORE ones read (and decrypted)
    from the local SSM, as CodeBuild reads them with the build role; and the parameters missing."""
    resolved, missing = {}, []
    for variable in variables:
        name, value = variable["name"], variable["value"]
        if variable["type"] != "PARAMETER_STORE":
            resolved[name] = value
        elif (parameter := ssm_backends[account][region].get_parameter(value)) is None:
            missing.append(value)
        else:
            resolved[name] = parameter.decrypt(parameter.value) or ""
    return resolved, missing


def _tail(path: Path) -> str:
    with path.open("rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(0, size - LOG_TAIL_BYTES))
        return log.read().decode("utf-8", errors="replace")
