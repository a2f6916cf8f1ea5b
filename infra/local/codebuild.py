"""CodeBuild, locally: moto records `start_build` and runs nothing (and reports every build
SUCCEEDED); the local runtime runs the project's buildspec for real, in a subprocess sandbox.
(moto also asks a NO_SOURCE project for a source location, which CodeBuild does not.)

A build here gets what a CodeBuild build gets and no more:
- a fresh, empty working directory (CODEBUILD_SRC_DIR), removed when the build ends;
- an environment holding nothing of this machine's but PATH, HOME and locale, plus the variables
  the buildspec declares and the build was started with: no AWS_* variable, no table or bucket
  name, no token (the stack's functions run with those; a build never does);
- limits on CPU time, memory, processes and file size (`prlimit`), and its timeout;
- its whole process group killed when it ends, for any reason, including the runtime stopping.
The one declared variable replaced is the dependency cache's path: CodeBuild's local cache lives
under /root, this machine's under the runtime's cache directory.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moto.codebuild import responses as codebuild_responses
from moto.codebuild.models import CodeBuildBackend, codebuild_backends
from moto.codebuild.responses import CodeBuildResponse
from moto.core.utils import iso_8601_datetime_with_milliseconds

from agentledger.testrun.driver import INHERITED_VARIABLES, kill_tree
from agentledger.testrun.layout import CACHE_VARIABLE, TEST_RUN_VARIABLE

PHASES = ("install", "pre_build", "build", "post_build")
LOG_TAIL_BYTES = 64 << 10
_MOTO_START_BUILD = CodeBuildResponse.start_build


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 3600
    memory_bytes: int = 8 << 30  # address space: Node and the JVM reserve far more than they use
    processes: int = 4096
    file_bytes: int = 2 << 30

    def prlimit(self) -> list[str]:
        return ["prlimit", f"--cpu={self.cpu_seconds}", f"--as={self.memory_bytes}",
                f"--nproc={self.processes}", f"--fsize={self.file_bytes}", "--"]


@dataclass
class LocalBuild:
    build_id: str
    project: str
    record: dict[str, Any]  # moto's build metadata, which batch_get_builds returns
    variables: dict[str, str]
    timeout_s: int
    process: subprocess.Popen[bytes] | None = None
    stopped: bool = False
    log_tail: str = ""
    done: threading.Event = field(default_factory=threading.Event)


class LocalCodeBuild:
    def __init__(self, work_root: Path, cache_dir: Path, limits: SandboxLimits | None = None,
                 concurrency: int = 2) -> None:
        self.work_root = work_root
        self.cache_dir = cache_dir
        self.limits = limits or SandboxLimits()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="local-codebuild")
        self._builds: dict[str, LocalBuild] = {}
        self._lock = threading.Lock()

    # -- what tests and people look at ------------------------------------------------------
    def builds_for(self, test_run_prefix: str) -> list[LocalBuild]:
        """Builds started for test runs whose id ("<run id>/<digest>") starts with the prefix."""
        with self._lock:
            return [b for b in self._builds.values() if b.variables.get(TEST_RUN_VARIABLE, "").startswith(test_run_prefix)]

    def wait(self, build_id: str, timeout_s: float) -> bool:
        return self._builds[build_id].done.wait(timeout_s)

    # -- moto's seams ------------------------------------------------------------------------
    def install(self, runs_project: Callable[[str], bool]) -> Callable[[], None]:
        """Run the builds of the projects `runs_project` claims; any other project's builds go to
        whatever handled them before (another runner, or moto), so runners nest."""
        runner = self
        original_start = CodeBuildResponse.start_build
        original_start_in_moto = _MOTO_START_BUILD
        original_batch_get = CodeBuildBackend.batch_get_builds
        original_stop = CodeBuildBackend.stop_build
        original_validate_source = codebuild_responses._validate_required_params_source

        def validate_source(source: dict[str, Any]) -> None:
            # CodeBuild takes a NO_SOURCE project without a location (its buildspec is inline);
            # moto asks every project for one.
            if source.get("type") != "NO_SOURCE":
                original_validate_source(source)

        def start_build(response: CodeBuildResponse) -> Any:
            name = response._get_param("projectName")
            if not runs_project(name):
                return original_start(response)
            result = original_start_in_moto(response)
            backend: CodeBuildBackend = codebuild_backends[response.current_account][response.region]
            record = backend.build_metadata[name].build_metadata
            runner._submit(backend, name, record, response)
            return result

        def batch_get_builds(backend: CodeBuildBackend, ids: list[str]) -> list[dict[str, Any]]:
            # The records as the sandbox keeps them, instead of moto's "every build SUCCEEDED".
            return [build for history in backend.build_metadata_history.values() for build in history
                    if build["id"] in ids]

        def stop_build(backend: CodeBuildBackend, build_id: str) -> dict[str, Any] | None:
            build = runner._builds.get(build_id)
            if build is None:
                return original_stop(backend, build_id)
            runner._stop(build)
            return build.record

        CodeBuildResponse.start_build = start_build  # type: ignore[method-assign]
        CodeBuildBackend.batch_get_builds = batch_get_builds  # type: ignore[method-assign]
        CodeBuildBackend.stop_build = stop_build  # type: ignore[method-assign]
        codebuild_responses._validate_required_params_source = validate_source

        def uninstall() -> None:
            codebuild_responses._validate_required_params_source = original_validate_source
            CodeBuildResponse.start_build = original_start  # type: ignore[method-assign]
            CodeBuildBackend.batch_get_builds = original_batch_get  # type: ignore[method-assign]
            CodeBuildBackend.stop_build = original_stop  # type: ignore[method-assign]
            self.shutdown()

        return uninstall

    def shutdown(self) -> None:
        with self._lock:
            running = [b for b in self._builds.values() if not b.done.is_set()]
        for build in running:
            self._stop(build)
        self._pool.shutdown(wait=True, cancel_futures=True)

    # -- one build ---------------------------------------------------------------------------
    def _submit(self, backend: CodeBuildBackend, project_name: str, record: dict[str, Any],
                response: CodeBuildResponse) -> None:
        project = backend.codebuild_projects[project_name].project_metadata
        environment = dict(project.get("environment") or {})
        declared = {v["name"]: v["value"] for v in environment.get("environmentVariables", [])}
        overrides = {v["name"]: v["value"] for v in response._get_param("environmentVariablesOverride") or []}
        timeout_minutes = response._get_param("timeoutInMinutesOverride") or project.get("timeoutInMinutes") or 60
        environment.update(
            image=response._get_param("imageOverride") or environment.get("image"),
            computeType=response._get_param("computeTypeOverride") or environment.get("computeType"),
            environmentVariables=[{"name": k, "value": v, "type": "PLAINTEXT"} for k, v in {**declared, **overrides}.items()],
        )
        buildspec = _parse_buildspec(project["source"].get("buildspec", ""))
        record.update(environment=environment, timeoutInMinutes=timeout_minutes, currentPhase="QUEUED",
                      buildStatus="IN_PROGRESS", phases=[], logs={"groupName": f"/aws/codebuild/{project_name}"})
        record.pop("endTime", None)
        build = LocalBuild(record["id"], project_name, record, {**declared, **overrides}, int(timeout_minutes) * 60)
        with self._lock:
            self._builds[build.build_id] = build
        self._pool.submit(self._run, build, buildspec)

    def _run(self, build: LocalBuild, buildspec: dict[str, Any]) -> None:
        self.work_root.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix="build-", dir=self.work_root))
        log_path = directory.with_suffix(".log")
        deadline = time.monotonic() + build.timeout_s
        status = "SUCCEEDED"
        try:
            with open(log_path, "wb") as log:
                env = self._environment(build, buildspec, directory)
                for phase in PHASES:
                    commands = (buildspec.get("phases", {}).get(phase) or {}).get("commands") or []
                    # CodeBuild: a failed build phase still runs post_build; a failed install or
                    # pre_build ends the build.
                    if not commands or (status != "SUCCEEDED" and phase != "post_build"):
                        continue
                    phase_status = self._run_phase(build, phase, commands, directory, env, log, deadline)
                    if phase_status != "SUCCEEDED" and status == "SUCCEEDED":
                        status = phase_status
                    if phase_status in ("TIMED_OUT", "STOPPED"):
                        break
            build.log_tail = _tail(log_path)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
            log_path.unlink(missing_ok=True)
            build.record.update(buildStatus="STOPPED" if build.stopped else status, currentPhase="COMPLETED",
                                endTime=iso_8601_datetime_with_milliseconds(), buildComplete=True)
            build.done.set()

    def _environment(self, build: LocalBuild, buildspec: dict[str, Any], directory: Path) -> dict[str, str]:
        host = getattr(os.environ, "process_env", os.environ)  # not a function's invocation view
        env = {name: host[name] for name in INHERITED_VARIABLES if name in host}
        env.update({k: str(v) for k, v in (buildspec.get("env", {}).get("variables") or {}).items()})
        env.update(build.variables)
        env[CACHE_VARIABLE] = str(self.cache_dir)
        env.update(CODEBUILD_BUILD_ID=build.build_id, CODEBUILD_SRC_DIR=str(directory))
        return env

    def _run_phase(self, build: LocalBuild, phase: str, commands: list[str], directory: Path,
                   env: dict[str, str], log: Any, deadline: float) -> str:
        build.record["currentPhase"] = phase.upper()
        started = iso_8601_datetime_with_milliseconds()
        log.write(f"[Container] Entering phase {phase.upper()}\n".encode())
        log.flush()
        script = "set -e\n" + "\n".join(commands) + "\n"
        if build.stopped:
            return "STOPPED"
        build.process = subprocess.Popen(
            [*self.limits.prlimit(), "bash", "-c", script], cwd=directory, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            exit_code = build.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            status = "STOPPED" if build.stopped else ("SUCCEEDED" if exit_code == 0 else "FAILED")
        except subprocess.TimeoutExpired:
            status = "TIMED_OUT"
        finally:
            _end_process_tree(build.process)
        log.write(f"[Container] Phase {phase.upper()} {status}\n".encode())
        build.record["phases"].append({"phaseType": phase.upper(), "phaseStatus": status, "startTime": started,
                                       "endTime": iso_8601_datetime_with_milliseconds()})
        return status

    def _stop(self, build: LocalBuild) -> None:
        build.stopped = True
        if build.process is not None:
            _end_process_tree(build.process)


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


def _tail(path: Path) -> str:
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(0, size - LOG_TAIL_BYTES))
        return log.read().decode("utf-8", errors="replace")
