"""The verify stage's test build: package the inputs, start one build per input digest, poll it,
and read what it uploaded into results a person can act on.

The build runs untrusted code, so what comes back (result.json, JUnit XML, the output tail) is
validated and bounded here; nothing it says is trusted beyond "these are the results it reports".
And those are believed only from a build that succeeded: the code under test can write its own
result.json and JUnit XML, and then make the build fail (kill the driver, say) before the real
ones are written; the status comes from the build service, which the build cannot forge.
"""
from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentledger.artifacts import stage_prefix

from .. import faults
from ..errors import NoTestsRanError, TestConfigurationError, VerificationFailedError
from ..fingerprints import digest, sha256_bytes
from ..models import ArtifactRef, BuildRequest, Run, Stage, TestRun, utc_now
from ..ports import ArtifactPort, BuildPort, LedgerPort
from ..states import BuildStatus
from ..testrun import layout
from ..testrun.config import ConfigError, TestRunConfig, load_config
from ..testrun.junit import TestCounts, summarize_junit

DRIVER_SOURCE = Path(__file__).resolve().parent.parent / "testrun" / "driver.py"
INPUT_LINK_SECONDS = 3600  # the build fetches its input as its first step
POLL_MIN_SECONDS = 2
POLL_MAX_SECONDS = 30
RESULT_LIMIT_BYTES = 1 << 20
# What is read of the JUnit XML a build uploaded, all files together: held in memory at once.
JUNIT_TOTAL_LIMIT_BYTES = 16 << 20
JUNIT_FILE_COUNT_LIMIT = 200
Outcome = Literal["passed", "failed", "timed_out", "install_failed", "no_tests", "build_failed"]


class CommandResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    exit_code: int | None
    duration_s: float = Field(ge=0)
    timed_out: bool


class InstallResult(CommandResult):
    commands: int = Field(ge=0)
    cache_hit: bool | None = None


class SuiteResult(CommandResult):
    command: str = Field(max_length=4096)


class DriverResult(BaseModel):
    """result.json, as the driver inside the build writes it."""

    model_config = ConfigDict(extra="ignore")

    install: InstallResult
    test: SuiteResult | None
    junit_files: list[str] = Field(default_factory=list, max_length=JUNIT_FILE_COUNT_LIMIT)


class TestReport(BaseModel):
    """command.json: what a person reads first about the test run."""

    __test__ = False
    outcome: Outcome
    passed: bool
    reason: str
    command: str | None
    exit_code: int | None
    duration_s: float | None
    timed_out: bool
    install_exit_code: int | None
    dependency_cache_hit: bool | None
    counts: TestCounts | None
    build_id: str | None
    build_status: BuildStatus
    input_digest: str


@dataclass
class BuildProgress:
    """Where a test build stands: still running (poll again after `poll_after_s`), or finished with
    the artifacts to commit and the failure to raise, if any."""

    run: Run
    test_run: TestRun
    poll_after_s: int = 0
    artifacts: list[ArtifactRef] | None = None
    report: TestReport | None = None
    failure: Exception | None = None

    @property
    def finished(self) -> bool:
        return self.artifacts is not None


class TestBuilds:
    __test__ = False

    def __init__(self, ledger: LedgerPort, artifacts: ArtifactPort, builds: BuildPort | None,
                 timeout_limit_s: int) -> None:
        self.ledger = ledger
        self.artifacts = artifacts
        self.builds = builds
        self.timeout_limit_s = timeout_limit_s

    def advance(self, run: Run, execution: str, snapshot_root: Path, source_files: dict[str, str],
                test_files: dict[str, str], test_runs: dict[str, TestRun], rerun_reported: bool) -> BuildProgress:
        """One step: start the build for these inputs if none exists, else look at it, and read
        its results once it has ended. `rerun_reported`: a person resumed after the results of
        these inputs were reported as a failure, so they are not reused."""
        run_id = run.run_id
        try:
            config = load_config(snapshot_root)
        except ConfigError as error:
            raise TestConfigurationError(str(error)) from error
        if config.timeout_s > self.timeout_limit_s:
            raise TestConfigurationError(
                f"{config.source} asks for a {config.timeout_s} s test timeout; this deployment allows at "
                f"most {self.timeout_limit_s} s (AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS)")
        input_digest = test_run_digest(source_files, test_files, config)
        test_run = test_runs.get(input_digest)
        attempt = 1
        if test_run is not None and rerun_reported and test_run.status != BuildStatus.IN_PROGRESS:
            attempt = test_run.attempt + 1
            test_run = None
        # Only an intent an earlier invocation recorded can have a build it did not get to record.
        intended_before = test_run is not None
        if test_run is None:
            run, test_run = self._record_intent(run, execution, input_digest, attempt, snapshot_root, source_files,
                                                test_files, config)
        if test_run.build_id is None:
            run, test_run = self._start(run, execution, test_run, config, look_for_earlier=intended_before)
            faults.reach(run_id, Stage.VERIFY, "build_running", execution)
        if test_run.status == BuildStatus.IN_PROGRESS:
            status = self._require_builds().status(test_run.build_id or "")
            if status is None or status == BuildStatus.IN_PROGRESS:
                return BuildProgress(run, test_run, poll_after_s=_poll_interval(test_run))
            test_run = test_run.model_copy(update={"status": status, "finished_at": utc_now()})
        return self._read_results(run, test_run, config)

    # -- starting -------------------------------------------------------------------------
    def _record_intent(self, run: Run, execution: str, input_digest: str, attempt: int, root: Path,
                       source_files: dict[str, str], test_files: dict[str, str],
                       config: TestRunConfig) -> tuple[Run, TestRun]:
        run_id = run.run_id
        archive = package_inputs(root, source_files, test_files, config)
        input_ref = self.artifacts.put(run_id, Stage.VERIFY, "test-input.tar.gz", archive, "application/gzip")
        output_key = f"{stage_prefix(run_id, Stage.VERIFY)}builds/{input_digest[:32]}-{attempt}/output.tar.gz"
        test_run = TestRun(digest=input_digest, attempt=attempt, input=input_ref, output_key=output_key,
                           execution=execution)
        # Recorded before the build starts, so a crash after starting it leaves a trace to reconcile.
        run = self.ledger.write(run, records=[test_run, input_ref], execution=execution,
                                reason=f"test run {input_digest[:12]} prepared ({len(archive)} bytes of input)")
        return run, test_run

    def _start(self, run: Run, execution: str, test_run: TestRun, config: TestRunConfig,
               look_for_earlier: bool) -> tuple[Run, TestRun]:
        builds = self._require_builds()
        marker = test_run.marker(run.run_id)
        build_id = builds.find(marker) if look_for_earlier else None
        if build_id is None:
            timeout_minutes = layout.build_timeout_minutes(config.timeout_s)
            build_id = builds.start(BuildRequest(
                test_run=marker,
                input_url=self.artifacts.download_url(test_run.input.key, INPUT_LINK_SECONDS),
                output_grant=self.artifacts.upload_grant(test_run.output_key, layout.OUTPUT_ARCHIVE_LIMIT_BYTES,
                                                         layout.output_grant_seconds(timeout_minutes)),
                image=config.image,
                compute=config.compute,
                timeout_minutes=timeout_minutes,
            ))
        started = test_run.model_copy(update={"build_id": build_id})
        run = self.ledger.write(run, records=[started], execution=execution,
                                reason=f"test build {build_id} started for inputs {test_run.digest[:12]}")
        return run, started

    def _require_builds(self) -> BuildPort:
        if self.builds is None:
            raise RuntimeError("verify needs TEST_BUILD_PROJECT_NAME: the stack must pass it to this function")
        return self.builds

    # -- reading what the build left ------------------------------------------------------
    def _read_results(self, run: Run, test_run: TestRun, config: TestRunConfig) -> BuildProgress:
        run_id = run.run_id
        archive = self.artifacts.read(test_run.output_key)
        contents = read_output_archive(archive) if archive is not None else None
        report, counts = judge(test_run, config, contents)
        test_run = test_run.model_copy(update={"report": report.model_dump(mode="json")})
        refs = [
            test_run.input,
            self.artifacts.put_json(run_id, Stage.VERIFY, "test-config.json", config.model_dump(mode="json")),
            self.artifacts.put_json(run_id, Stage.VERIFY, "command.json", report.model_dump(mode="json")),
            self.artifacts.put_text(run_id, Stage.VERIFY, "test-output.txt",
                                    contents.output if contents else _missing_output(test_run)),
        ]
        if counts is not None:
            refs.append(self.artifacts.put_json(run_id, Stage.VERIFY, "test-results.json",
                                                counts.model_dump(mode="json")))
        return BuildProgress(run, test_run, artifacts=refs, report=report, failure=_failure(report))


@dataclass(frozen=True)
class OutputContents:
    result: DriverResult | None
    output: str
    junit: dict[str, bytes]
    junit_unread: list[str] = field(default_factory=list)  # JUnit files past JUNIT_TOTAL_LIMIT_BYTES
    problem: str | None = None  # why result.json could not be used


def test_run_digest(source_files: dict[str, str], test_files: dict[str, str], config: TestRunConfig) -> str:
    return digest({
        "source": source_files,
        "tests": {path: sha256_bytes(text.encode()) for path, text in test_files.items()},
        "config": config.model_dump(mode="json"),
        "driver": sha256_bytes(DRIVER_SOURCE.read_bytes()),
    })


def _poll_interval(test_run: TestRun) -> int:
    """Short at first (most builds of small repositories take seconds), then every 30 s."""
    waited = (datetime.fromisoformat(utc_now()) - datetime.fromisoformat(test_run.created_at)).total_seconds()
    return int(max(POLL_MIN_SECONDS, min(POLL_MAX_SECONDS, waited / 4)))


def package_inputs(root: Path, source_files: dict[str, str], test_files: dict[str, str],
                   config: TestRunConfig) -> bytes:
    """The build's input: the source tree with the generated tests written in, the driver and the
    configuration. Deterministic (sorted, no timestamps or owners), so equal inputs give equal bytes."""
    members: dict[str, bytes] = {f"{layout.REPOSITORY_DIR}/{path}": (root / path).read_bytes()
                                 for path in sorted(source_files)}
    members.update({f"{layout.REPOSITORY_DIR}/{path}": text.encode() for path, text in test_files.items()})
    members[layout.DRIVER_FILE] = DRIVER_SOURCE.read_bytes()
    members[layout.CONFIG_FILE] = config.model_dump_json(indent=2).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        for name in sorted(members):
            data = members[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_output_archive(archive: bytes) -> OutputContents:
    """The results a build uploaded, read in memory with every size bounded; anything else in the
    archive is ignored. JUnit files past the total are named, not read."""
    result_bytes: bytes | None = None
    output = ""
    junit: dict[str, bytes] = {}
    unread: list[str] = []
    junit_bytes = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            for member in tar:
                name = PurePosixPath(member.name.removeprefix("./"))
                if not member.isfile():
                    continue
                if str(name) == layout.RESULT_FILE and member.size <= RESULT_LIMIT_BYTES:
                    result_bytes = _read_member(tar, member)
                elif str(name) == layout.OUTPUT_FILE and member.size <= 2 * layout.OUTPUT_LIMIT_BYTES:
                    output = _read_member(tar, member).decode("utf-8", errors="replace")
                elif (len(name.parts) == 2 and name.parts[0] == layout.JUNIT_DIR and name.suffix == ".xml"
                      and len(junit) + len(unread) < JUNIT_FILE_COUNT_LIMIT):
                    if junit_bytes + member.size <= JUNIT_TOTAL_LIMIT_BYTES:
                        junit[name.name] = _read_member(tar, member)
                        junit_bytes += member.size
                    else:
                        unread.append(name.name)
    except (tarfile.TarError, EOFError, OSError) as error:
        return OutputContents(None, output, junit, unread,
                              problem=f"the uploaded results are not a readable archive: {error}")
    if result_bytes is None:
        return OutputContents(None, output, junit, unread, problem=f"the build uploaded no {layout.RESULT_FILE}")
    try:
        result = DriverResult.model_validate_json(result_bytes)
    except ValidationError as error:
        return OutputContents(None, output, junit, unread,
                              problem=f"{layout.RESULT_FILE} is not valid: {error.errors()[:3]}")
    return OutputContents(result, output, junit, unread)


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    extracted = tar.extractfile(member)
    return extracted.read() if extracted else b""


def judge(test_run: TestRun, config: TestRunConfig,
          contents: OutputContents | None) -> tuple[TestReport, TestCounts | None]:
    """What the build shows. Passing needs the build to have succeeded, the suite to exit 0 AND,
    when it wrote JUnit XML, at least one test to have executed: an empty suite proves nothing, and
    is not reported as a failure of the code either. What a build that did not succeed uploaded
    is not read as results at all (the module docstring says why)."""
    succeeded = test_run.status == BuildStatus.SUCCEEDED
    result = contents.result if contents and succeeded else None
    counts = (summarize_junit(contents.junit, contents.junit_unread)
              if contents and result and (contents.junit or contents.junit_unread) else None)
    base: dict[str, Any] = {
        "command": config.test, "exit_code": None, "duration_s": None, "timed_out": False,
        "install_exit_code": None, "dependency_cache_hit": None, "counts": counts,
        "build_id": test_run.build_id, "build_status": test_run.status, "input_digest": test_run.digest,
    }
    if result is None:
        if contents is None:
            why = "the build uploaded no results"
        elif contents.result is None:
            why = contents.problem or "its results could not be read"
        else:
            why = "the results it uploaded are not believed, since only a build that succeeded shows its tests ran"
        status = test_run.status.value.lower().replace("_", " ")
        return TestReport(outcome="timed_out" if test_run.status == BuildStatus.TIMED_OUT else "build_failed",
                          passed=False, reason=f"test build {status}: {why}", **base), None
    base.update(install_exit_code=result.install.exit_code, dependency_cache_hit=result.install.cache_hit)
    if result.install.timed_out or result.install.exit_code != 0 or result.test is None:
        why = (f"was killed after the {config.timeout_s} s timeout" if result.install.timed_out
               else f"exited {result.install.exit_code}")
        base.update(timed_out=result.install.timed_out)
        return TestReport(outcome="install_failed", passed=False,
                          reason=f"installing the repository's dependencies {why}", **base), counts
    suite = result.test
    base.update(exit_code=suite.exit_code, duration_s=suite.duration_s, timed_out=suite.timed_out)
    if suite.timed_out:
        return TestReport(outcome="timed_out", passed=False,
                          reason=f"the test command was killed after the {config.timeout_s} s timeout", **base), counts
    if counts is not None and counts.tests - counts.skipped == 0 and counts.failed + counts.errors == 0:
        # Whatever the exit code (pytest's is 5 when it collects nothing), nothing was shown.
        return TestReport(outcome="no_tests", passed=False,
                          reason=f"the test command exited {suite.exit_code} but executed no test "
                                 f"({counts.skipped} skipped)", **base), counts
    if suite.exit_code != 0:
        detail = f": {counts.failed} failed, {counts.errors} errored of {counts.tests}" if counts else ""
        return TestReport(outcome="failed", passed=False,
                          reason=f"the test command exited {suite.exit_code}{detail}", **base), counts
    detail = f": {counts.passed} passed, {counts.skipped} skipped" if counts else " (it wrote no JUnit XML to count)"
    return TestReport(outcome="passed", passed=True, reason=f"the test command exited 0{detail}", **base), counts


def _missing_output(test_run: TestRun) -> str:
    return (f"[agentledger: build {test_run.build_id} ended {test_run.status.value} without uploading its output; "
            "see its log in CloudWatch Logs]\n")


def _failure(report: TestReport) -> Exception | None:
    if report.passed:
        return None
    if report.outcome == "no_tests":
        return NoTestsRanError(report.reason)
    return VerificationFailedError(f"{report.reason}; see test-output.txt")
