"""The verify stage's test build: the suite on the source tree with the written tests, in the
sandbox (workflow/builds.py starts it and reads it once it ended), and what it uploaded read into results a person
can act on.

The build runs untrusted code, so what comes back (result.json, JUnit XML, the output tail) is
validated and bounded here; nothing it says is trusted beyond "these are the results it reports".
And those are believed only from a build that succeeded: the code under test can write its own
result.json and JUnit XML, and then make the build fail (kill the driver, say) before the real
ones are written; the status comes from the build service, which the build cannot forge.
"""
from __future__ import annotations

import io
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..buildkit import layout
from ..errors import NoTestsRanError, VerificationFailedError
from ..fingerprints import digest
from ..models import ArtifactRef, Run, Stage, TestRun
from ..states import BuildStatus
from ..testrun.jacoco import CoverageCounts, summarize_jacoco
from ..testrun.junit import TestCounts, summarize_junit
from ..testrun.layout import build_timeout_minutes
from ..testrun.pytest_config import PLUGIN_OPTIONS
from .builds import (
    BuildAllowance,
    BuildInputs,
    Builds,
    cache_key,
    control_files,
    failed_build,
    kit_digest,
    load_build_config,
    missing_output,
    repository_files,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ports import ArtifactPort, BuildPort, LedgerPort
    from ..testrun.config import TestRunConfig

RESULT_LIMIT_BYTES = 1 << 20
KIT_FAILURE_LIMIT_BYTES = 4096  # the kit keeps the last 4 KiB of its failure record
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
    coverage_files: list[str] = Field(default_factory=list, max_length=JUNIT_FILE_COUNT_LIMIT)


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
    coverage: CoverageCounts | None = None  # from the JaCoCo reports the config's `jacoco` globs matched
    build_id: str | None
    build_status: BuildStatus
    input_digest: str


@dataclass
class VerifyProgress:
    """Where the verify build stands: still running (its end wakes the stage, at the latest after
    `poll_after_s`), or
    finished with the artifacts to commit and the failure to raise, if any."""

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
                 allowance: BuildAllowance) -> None:
        self.artifacts = artifacts
        self.builds = Builds(ledger, artifacts, builds)
        self.allowance = allowance

    def advance(self, run: Run, execution: str, snapshot_root: Path, source_files: dict[str, str],
                test_files: ArtifactRef, test_runs: dict[str, TestRun], rerun_reported: bool) -> VerifyProgress:
        """One step of the suite's build; its results once it has ended. The written tests are read
        from their artifact (`test_files`) only to start the build: the artifact's digest, which the
        ledger holds, is what names the build."""
        config = load_build_config(snapshot_root, self.allowance)
        inputs = BuildInputs(
            stage=Stage.VERIFY, label="test", input_name="test-input.tar.gz",
            digest=test_run_digest(source_files, test_files, config), config=config,
            files=lambda: {**repository_files(snapshot_root, source_files, self.artifacts.get_json(test_files)),
                           **control_files(config)},
            timeout_minutes=build_timeout_minutes(config.timeout_s),
            cache_key=cache_key(run, config, source_files))
        progress = self.builds.advance(run, execution, inputs, test_runs, rerun_reported)
        if not progress.finished:
            return VerifyProgress(progress.run, progress.test_run, poll_after_s=progress.poll_after_s)
        return self._read_results(progress.run, progress.test_run, config, progress.archive,
                                  wrote_tests=lambda: bool(self.artifacts.get_json(test_files)))

    def _read_results(self, run: Run, test_run: TestRun, config: TestRunConfig,
                      archive: bytes | None, wrote_tests: Callable[[], bool]) -> VerifyProgress:
        run_id = run.run_id
        contents = read_output_archive(archive) if archive is not None else None
        report, counts = judge(test_run, config, contents)
        test_run = test_run.model_copy(update={"report": report.model_dump(mode="json")})
        refs = [
            test_run.input,
            self.artifacts.put_json(run_id, Stage.VERIFY, "test-config.json", config.model_dump(mode="json")),
            self.artifacts.put_json(run_id, Stage.VERIFY, "command.json", report.model_dump(mode="json")),
            self.artifacts.put_text(run_id, Stage.VERIFY, "test-output.txt",
                                    contents.output if contents else missing_output(test_run)),
        ]
        if counts is not None:
            refs.append(self.artifacts.put_json(run_id, Stage.VERIFY, "test-results.json",
                                                counts.model_dump(mode="json")))
        return VerifyProgress(run, test_run, artifacts=refs, report=report, failure=_failure(report, wrote_tests))


@dataclass(frozen=True)
class OutputContents:
    result: DriverResult | None
    output: str
    junit: dict[str, bytes]
    junit_unread: list[str] = field(default_factory=list)  # JUnit files past JUNIT_TOTAL_LIMIT_BYTES
    problem: str | None = None  # why result.json could not be used
    coverage: dict[str, bytes] = field(default_factory=dict)  # JaCoCo XML, bounded as JUnit's is
    coverage_unread: list[str] = field(default_factory=list)
    failure: str | None = None  # what agentledger's kit in the build said of its own failure


def test_run_digest(source_files: dict[str, str], test_files: ArtifactRef, config: TestRunConfig) -> str:
    return digest({
        "source": source_files,
        "tests": test_files.sha256,
        "config": config.model_dump(mode="json"),
        "driver": kit_digest(),
    })


def read_output_archive(archive: bytes) -> OutputContents:
    """The results a build uploaded, read in memory with every size bounded; anything else in the
    archive is ignored. JUnit and JaCoCo files past the total are named, not read."""
    result_bytes: bytes | None = None
    problem: str | None
    output = ""
    failure = None
    reports = {layout.JUNIT_DIR: _Reports(), layout.COVERAGE_DIR: _Reports()}
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
                elif str(name) == layout.FAILURE_FILE and member.size <= KIT_FAILURE_LIMIT_BYTES:
                    failure = " ".join(_read_member(tar, member).decode("utf-8", errors="replace").split()) or None
                elif len(name.parts) == 2 and name.parts[0] in reports and name.suffix == ".xml":
                    reports[name.parts[0]].add(tar, member, name.name)
    except (tarfile.TarError, EOFError, OSError) as error:
        result_bytes, problem = None, f"the uploaded results are not a readable archive: {error}"
    else:
        problem = None if result_bytes is not None else f"the build uploaded no {layout.RESULT_FILE}"
    result = None
    if result_bytes is not None:
        try:
            result = DriverResult.model_validate_json(result_bytes)
        except ValidationError as error:
            problem = f"{layout.RESULT_FILE} is not valid: {error.errors()[:3]}"
    junit, coverage = reports[layout.JUNIT_DIR], reports[layout.COVERAGE_DIR]
    return OutputContents(result, output, junit.read, junit.unread, problem, coverage.read, coverage.unread, failure)


@dataclass
class _Reports:
    """XML reports of one kind read from the archive: at most JUNIT_FILE_COUNT_LIMIT files and
    JUNIT_TOTAL_LIMIT_BYTES in all; past the total, named and not read."""

    read: dict[str, bytes] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    size: int = 0

    def add(self, tar: tarfile.TarFile, member: tarfile.TarInfo, name: str) -> None:
        if len(self.read) + len(self.unread) >= JUNIT_FILE_COUNT_LIMIT:
            return
        if self.size + member.size <= JUNIT_TOTAL_LIMIT_BYTES:
            self.read[name] = _read_member(tar, member)
            self.size += member.size
        else:
            self.unread.append(name)


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
    coverage = (summarize_jacoco(contents.coverage, contents.coverage_unread)
                if contents and result and (contents.coverage or contents.coverage_unread) else None)
    base: dict[str, Any] = {
        "command": config.test, "exit_code": None, "duration_s": None, "timed_out": False,
        "install_exit_code": None, "dependency_cache_hit": None, "counts": counts, "coverage": coverage,
        "build_id": test_run.build_id, "build_status": test_run.status, "input_digest": test_run.digest,
    }
    if result is None:
        if contents is None:
            why = "the build uploaded no results"
        elif contents.result is None:
            why = contents.problem or "its results could not be read"
        else:
            why = "the results it uploaded are not believed, since only a build that succeeded shows its tests ran"
        failed = failed_build("test build", test_run, contents.failure if contents else None)
        return TestReport(outcome="timed_out" if test_run.status == BuildStatus.TIMED_OUT else "build_failed",
                          passed=False, reason=f"{failed}: {why}", **base), None
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
        lacking = "" if counts and counts.tests else what_the_suite_lacked(contents.output if contents else "")
        return TestReport(outcome="failed", passed=False,
                          reason=f"the test command exited {suite.exit_code}{detail}{lacking}", **base), counts
    detail = f": {counts.passed} passed, {counts.skipped} skipped" if counts else " (it wrote no JUnit XML to count)"
    return TestReport(outcome="passed", passed=True, reason=f"the test command exited 0{detail}", **base), counts


# How pytest says it could not start: an option of a plugin it does not have, a module the suite
# (or its conftest) imports that no install put there.
UNKNOWN_OPTION = re.compile(r"error: unrecognized arguments: (-[^\s]+)")
MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_.]{1,100})'")
DECLARE = ("; declare it in agentledger.toml, e.g. "
           'install = ["python -I -m pip install . pytest {package}"]')


def what_the_suite_lacked(output: str) -> str:
    """Why a suite that ran no test could not start, and how a repository declares what it lacked;
    empty when its output does not say."""
    if found := UNKNOWN_OPTION.search(output):
        option = found[1].split("=", 1)[0]
        plugin = next((name for name, options in PLUGIN_OPTIONS.items() if option in options), "THE-PLUGIN")
        return (f": the suite could not start: pytest does not know {option}, an option of a plugin"
                f" the project does not declare" + DECLARE.format(package=plugin))
    if module := MISSING_MODULE.search(output):
        top = module[1].split(".")[0]
        return (f": the suite could not start: it imports {module[1]}, which nothing installed"
                + DECLARE.format(package=top.replace("_", "-")))
    return ""


def _failure(report: TestReport, wrote_tests: Callable[[], bool]) -> Exception | None:
    """`wrote_tests` is asked only of a suite that ran no test: only then are the written tests read."""
    if report.passed:
        return None
    if report.outcome == "no_tests":
        # A project without tests of its own that the writers added none to has nothing to run: the
        # run's outcome (no tests kept) says so, and the reviewer sees why, with no one handed it.
        # Tests written that did not run are a failure: they were to show the change works.
        return NoTestsRanError(report.reason) if wrote_tests() else None
    return VerificationFailedError(f"{report.reason}; see test-output.txt")
