"""A stage's build in the sandbox (CodeBuild on AWS, the local sandbox locally): package the
inputs, start one build per input digest, look at it when its end wakes the stage (build_waits.py),
and hand back what it uploaded.

Two stages run builds: execute (writing candidate tests and filtering them) and verify (the
suite). Both run untrusted code, so what comes back is bounded by the caller that reads it, and
believed only from a build that succeeded: the code under test can write its own results and then
make the build fail; the status comes from the build service, which the build cannot forge.
"""
from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentledger.artifacts import stage_prefix

from .. import buildkit, faults
from ..buildkit import layout
from ..errors import TestConfigurationError
from ..fingerprints import digest, sha256_bytes
from ..models import BuildRequest, Run, Stage, TestRun, seconds_between, utc_now
from ..states import BuildStatus
from ..testrun.config import ConfigError, TestRunConfig, installs_nothing_of_the_repository, load_config
from ..testrun.layout import output_grant_seconds

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ports import ArtifactPort, BuildPort, LedgerPort

KIT_SOURCE = Path(buildkit.__file__).resolve().parent
# What of agentledger every build carries, by its path in the input: the kit, whole.
KIT_FILES: dict[str, Path] = {
    f"{layout.KIT_DIR}/{path.relative_to(KIT_SOURCE).as_posix()}": path
    for path in sorted(KIT_SOURCE.rglob("*.py")) if "__pycache__" not in path.parts
}
INPUT_LINK_SECONDS = 3600  # the build fetches its input as its first step
# How long the state machine's parked wait lasts before it looks itself: CodeBuild's state-change
# event wakes it as soon as the build ends (workflow/build_waits.py), so this is only what a lost
# event costs.
BUILD_END_FALLBACK_SECONDS = 300
# A wait for room is woken by the end of another build of the project, oldest first. Nothing of the
# project may be running, though: the account's limit counts other projects' builds, and a build may
# end between the refused start and the parking. So the wait also looks itself, after as long as it
# has already waited (from ROOM_FIRST_LOOK_SECONDS up to ROOM_FALLBACK_SECONDS): a short refusal
# costs seconds, and 10,000 stages long in the queue look every 5 minutes, 33 looks a second,
# instead of taking the room out of their turn every few seconds.
ROOM_FIRST_LOOK_SECONDS = 10
ROOM_FALLBACK_SECONDS = 300


def room_wait_seconds(waited_s: float) -> int:
    """How long a stage refused for want of room parks before it looks again, having waited `waited_s`."""
    return int(min(ROOM_FALLBACK_SECONDS, max(ROOM_FIRST_LOOK_SECONDS, waited_s)))


@dataclass(frozen=True)
class BuildAllowance:
    """What the deployment lets one repository's builds ask for: the operator's bounds on what an
    untrusted repository spends and runs on."""

    timeout_limit_s: int
    computes: tuple[str, ...]
    images: tuple[str, ...]


def load_build_config(root: Path, allowance: BuildAllowance) -> TestRunConfig:
    """The repository's test-run configuration, within what the deployment allows."""
    try:
        config = load_config(root)
    except ConfigError as error:
        raise TestConfigurationError(str(error)) from error
    if config.timeout_s > allowance.timeout_limit_s:
        raise TestConfigurationError(
            f"{config.source} asks for a {config.timeout_s} s test timeout; this deployment allows at "
            f"most {allowance.timeout_limit_s} s (AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS)")
    for key, value, allowed, variable in (("compute", config.compute, allowance.computes, "BUILD_COMPUTES"),
                                          ("image", config.image, allowance.images, "BUILD_IMAGES")):
        if value not in allowed:
            raise TestConfigurationError(
                f"{config.source} asks for {key} {value}; this deployment allows {', '.join(allowed)} "
                f"(AGENTLEDGER_{variable})")
    return config


def kit_digest() -> str:
    return digest({path: sha256_bytes(source.read_bytes()) for path, source in KIT_FILES.items()})


def cache_key(run: Run, config: TestRunConfig, source_files: dict[str, str]) -> str | None:
    """The dependency cache entry a build of this run may use or fill: everything the install depends
    on and, unless the install runs nothing of the repository's (installs_nothing_of_the_repository),
    the repository itself (as the caller who asked for the run names it): what a repository's code
    could have written into an entry, no other repository ever gets. Nothing of the build's is asked
    for it. None when the build caches nothing."""
    if not config.virtualenv:
        return None
    inputs: dict[str, Any] = {
        "files": {name: source_files.get(name) for name in sorted(config.cache_key_files)},
        "install": config.install,
        "env": config.env,
        "image": config.image,
    }
    if not installs_nothing_of_the_repository(config):
        inputs.update(repository=run.repository, requested_by=run.requested_by)
    return digest(inputs).removeprefix("sha256:")


@dataclass(frozen=True)
class BuildInputs:
    """What one build of a stage runs on. `files` is called only when the build is first started:
    the repository's files and what the stage adds, by their path in the input."""

    stage: Stage
    label: str  # what the ledger calls these builds: "test" (verify), "generation" (execute)
    input_name: str  # the input tarball's artifact name
    digest: str
    config: TestRunConfig
    files: Callable[[], dict[str, bytes]]
    timeout_minutes: int
    cache_key: str | None


@dataclass
class BuildProgress:
    """Where a build stands: still running or waiting for room (its end, or another build's, wakes
    the stage; else it looks again after `poll_after_s`), or finished with the archive it
    uploaded (None when it uploaded nothing)."""

    run: Run
    test_run: TestRun
    poll_after_s: int = 0
    finished: bool = False
    archive: bytes | None = None


class Builds:
    def __init__(self, ledger: LedgerPort, artifacts: ArtifactPort, builds: BuildPort | None) -> None:
        self.ledger = ledger
        self.artifacts = artifacts
        self.builds = builds

    def advance(self, run: Run, execution: str, inputs: BuildInputs, test_runs: dict[str, TestRun],
                rerun_reported: bool) -> BuildProgress:
        """One step: start the build for these inputs if none exists, else look at it, and fetch
        what it uploaded once it has ended. `rerun_reported`: a person resumed after the results of
        these inputs were reported as a failure, so they are not reused."""
        test_run = test_runs.get(inputs.digest)
        attempt = 1
        if test_run is not None and rerun_reported and test_run.status != BuildStatus.IN_PROGRESS:
            attempt = test_run.attempt + 1
            test_run = None
        # Only an intent an earlier invocation recorded can have a build it did not get to record.
        intended_before = test_run is not None
        if test_run is None:
            run, test_run = self._record_intent(run, execution, inputs, attempt)
        if test_run.build_id is None:
            run, test_run = self._start(run, execution, test_run, inputs, look_for_earlier=intended_before)
            if test_run.build_id is None:
                # No room for another build now: the stage waits in the queue, in the order the
                # builds were asked for (build_waits.py, which also notices a queue that stopped
                # moving), and the next look starts it (or finds the one a lost answer started).
                waited_s = seconds_between(test_run.created_at, utc_now())
                return BuildProgress(run, test_run, poll_after_s=room_wait_seconds(waited_s))
            faults.reach(run.run_id, inputs.stage, "build_running", execution)
            # Not looked at here: the wait parked on it looks once it is parked (build_waits.py),
            # which also finds a build that ended this soon.
            return BuildProgress(run, test_run, poll_after_s=BUILD_END_FALLBACK_SECONDS)
        if test_run.status == BuildStatus.IN_PROGRESS:
            look = self._require_builds().look(test_run.build_id or "")
            if look is None or look.status == BuildStatus.IN_PROGRESS:
                return BuildProgress(run, test_run, poll_after_s=BUILD_END_FALLBACK_SECONDS)
            test_run = test_run.model_copy(update={"status": look.status, "finished_at": utc_now(),
                                                   "failure": look.failure})
        return BuildProgress(run, test_run, finished=True, archive=self.artifacts.read(test_run.output_key))

    def _record_intent(self, run: Run, execution: str, inputs: BuildInputs, attempt: int) -> tuple[Run, TestRun]:
        run_id = run.run_id
        archive = package(inputs.files())
        input_ref = self.artifacts.put(run_id, inputs.stage, inputs.input_name, archive, "application/gzip")
        output_key = f"{stage_prefix(run_id, inputs.stage)}builds/{inputs.digest[:32]}-{attempt}/output.tar.gz"
        test_run = TestRun(digest=inputs.digest, stage=inputs.stage, attempt=attempt, input=input_ref,
                           output_key=output_key, execution=execution)
        # Recorded before the build starts, so a crash after starting it leaves a trace to reconcile.
        run = self.ledger.write(run, records=[test_run, input_ref], execution=execution,
                                reason=f"{inputs.label} run {inputs.digest[:12]} prepared "
                                       f"({len(archive)} bytes of input)")
        return run, test_run

    def _output_grant(self, test_run: TestRun, timeout_minutes: int) -> dict[str, Any]:
        """The grant for the build's results, and within it one for the progress a generation
        build reports while it runs."""
        expires_s = output_grant_seconds(timeout_minutes)
        grant = self.artifacts.upload_grant(test_run.output_key, layout.OUTPUT_ARCHIVE_LIMIT_BYTES, expires_s)
        if test_run.stage == Stage.EXECUTE:
            grant[layout.PROGRESS_GRANT_KEY] = self.artifacts.upload_grant(
                test_run.progress_key, layout.PROGRESS_LIMIT_BYTES, expires_s)
        return grant

    def _start(self, run: Run, execution: str, test_run: TestRun, inputs: BuildInputs,
               look_for_earlier: bool) -> tuple[Run, TestRun]:
        builds = self._require_builds()
        marker = test_run.marker(run.run_id)
        build_id = builds.find(marker) if look_for_earlier else None
        if build_id is None:
            build_id = builds.start(BuildRequest(
                test_run=marker,
                input_url=self.artifacts.download_url(test_run.input.key, INPUT_LINK_SECONDS),
                output_grant=self._output_grant(test_run, inputs.timeout_minutes),
                cache_key=inputs.cache_key,
                image=inputs.config.image,
                compute=inputs.config.compute,
                timeout_minutes=inputs.timeout_minutes,
            ))
        if build_id is None:
            return run, test_run
        started = test_run.model_copy(update={"build_id": build_id})
        run = self.ledger.write(run, records=[started], execution=execution,
                                reason=f"{inputs.label} build {build_id} started for inputs {test_run.digest[:12]}")
        return run, started

    def _require_builds(self) -> BuildPort:
        if self.builds is None:
            raise RuntimeError("this stage needs TEST_BUILD_PROJECT_NAME: the stack must pass it to this function")
        return self.builds


def repository_files(root: Path, source_files: dict[str, str], added: dict[str, str]) -> dict[str, bytes]:
    """The source tree with `added` (path -> text) written in, by their path in the input."""
    files = {f"{layout.REPOSITORY_DIR}/{path}": (root / path).read_bytes() for path in sorted(source_files)}
    files.update({f"{layout.REPOSITORY_DIR}/{path}": text.encode() for path, text in added.items()})
    return files


def control_files(config: TestRunConfig) -> dict[str, bytes]:
    """What every build of agentledger's carries besides the repository."""
    files = {path: source.read_bytes() for path, source in KIT_FILES.items()}
    files[layout.KIT_ENTRY_FILE] = layout.KIT_ENTRY.encode()
    files[layout.CONFIG_FILE] = config.model_dump_json(indent=2).encode()
    return files


# Every member's modification time: fixed, so equal inputs give equal members, and not the epoch,
# which the extracted files would carry: ZIP cannot hold times before 1980, so a backend that
# zips them (flit_core building more-itertools' wheel) failed the install. A day in, for any zone.
MEMBER_MTIME = 315_619_200  # 1980-01-02T00:00:00Z


def package(members: dict[str, bytes]) -> bytes:
    """A build's input. Sorted, one fixed timestamp, no owners."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        for name in sorted(members):
            data = members[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, MEMBER_MTIME
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def missing_output(test_run: TestRun) -> str:
    said = f" ({test_run.failure})" if test_run.failure else ""
    return (f"[agentledger: build {test_run.build_id} ended {test_run.status.value}{said} without uploading its "
            "output; see its log in CloudWatch Logs]\n")


def failed_build(what: str, test_run: TestRun, kit_failure: str | None) -> str:
    """Why a build did not succeed, as far as anyone can tell: its status, what the build service
    says of its failed phase, and what agentledger's kit in it said of its own failure."""
    reasons = [reason for reason in (test_run.failure, kit_failure and f"agentledger in the build: {kit_failure}")
               if reason]
    status = test_run.status.value.lower().replace("_", " ")
    return f"{what} {status}" + (f" ({'; '.join(reasons)})" if reasons else "")
