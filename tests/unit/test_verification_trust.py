"""Verify believes the build service, not the build's files: a build that did not succeed is never
passed whatever it uploaded, and what verify keeps of the JUnit XML a build wrote is bounded, so
no ledger item can grow past DynamoDB's 400 KB whatever the code under test writes."""
from __future__ import annotations

import io
import json
import tarfile
from typing import TYPE_CHECKING, Any

import pytest

from agentledger.buildkit import layout
from agentledger.errors import VerificationFailedError
from agentledger.models import Stage, StageStatus
from agentledger.restart import FailureKind, RecoveryAction, classify
from agentledger.states import BuildStatus
from agentledger.testing.builds import archive_of, results_archive
from agentledger.testing.world import World, build_world
from agentledger.testrun.junit import MAX_FAILING_NAMES, MAX_NAME_CHARS, MAX_PACKAGES
from agentledger.workflow.verification import JUNIT_FILE_COUNT_LIMIT, JUNIT_TOTAL_LIMIT_BYTES

if TYPE_CHECKING:
    from pathlib import Path

DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def _verify(world: World) -> tuple[str, Exception]:
    """Run a fresh run to verify; the run's id and what verify raised."""
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    with pytest.raises(VerificationFailedError) as raised:
        world.stage(Stage.VERIFY, run_id, execution)
    return run_id, raised.value


def _outputs(world: World, run_id: str) -> dict[str, Any]:
    """The verify stage's artifacts, by name."""
    ledger = world.ledger.load(run_id)
    return {a.name: world.artifacts.get(a) for a in ledger.artifacts if a.key in ledger.stages["verify"].outputs}


@pytest.mark.parametrize(("ended", "outcome"), [
    (BuildStatus.FAILED, "build_failed"), (BuildStatus.FAULT, "build_failed"),
    (BuildStatus.STOPPED, "build_failed"), (BuildStatus.TIMED_OUT, "timed_out"),
])
def test_a_build_that_did_not_succeed_is_not_passed_by_the_results_it_forged(world: World, ended: BuildStatus,
                                                                           outcome: str) -> None:
    # The code under test wrote a passing result.json and JUnit XML, then made the build fail.
    world.builds.uploads, world.builds.ends = results_archive("pass"), ended
    run_id, error = _verify(world)

    assert "not believed" in str(error)
    ledger = world.ledger.load(run_id)
    assert ledger.stages["verify"].status == StageStatus.FAILED and "test_run" not in ledger.evidence
    outputs = _outputs(world, run_id)
    report = json.loads(outputs["command.json"])
    assert (report["passed"], report["outcome"], report["build_status"]) == (False, outcome, ended.value)
    assert report["counts"] is None and "test-results.json" not in outputs  # its counts are not shown either
    [test_run] = [t for t in ledger.test_runs.values() if t.stage == Stage.VERIFY]
    assert test_run.report is not None and test_run.report["passed"] is False
    # The restart policy hands it to a person; it is not retried as if the build had flaked.
    verdict = classify(type(error).__name__, str(error), 0, 3, failed_stage=Stage.VERIFY)
    assert (verdict.kind, verdict.action) == (FailureKind.NEEDS_PERSON, RecoveryAction.HANDOFF)


def test_the_same_results_from_a_build_that_succeeded_pass(world: World) -> None:
    world.builds.uploads, world.builds.ends = results_archive("pass"), BuildStatus.SUCCEEDED
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    assert world.stage(Stage.VERIFY, run_id, execution)["done"]
    assert json.loads(_outputs(world, run_id)["command.json"])["passed"] is True


def _hostile_junit() -> dict[str, bytes]:
    """JUnit XML as the code under test can write it: many failing cases with names of 10,000
    characters in hundreds of packages, spread over more files and bytes than verify reads."""
    long = "n" * 10_000
    cases = "".join(f'<testcase classname="pkg{i % 300}{long}.mod" name="test_{i}{long}"><failure/></testcase>'
                    for i in range(600))
    heavy = f"<testsuites><testsuite>{cases}</testsuite></testsuites>".encode()
    documents = {f"{layout.JUNIT_DIR}/a{i}{'x' * 2000}.xml": heavy for i in range(3)}
    documents.update({f"{layout.JUNIT_DIR}/b{i}{'y' * 2000}.xml": b"<testsuite/>" for i in range(300)})
    return documents


def test_what_verify_keeps_of_hostile_junit_is_bounded(world: World) -> None:
    documents = _hostile_junit()
    [heavy, *_] = documents.values()
    assert len(heavy) * 2 > JUNIT_TOTAL_LIMIT_BYTES  # so at least one heavy file is left unread
    result = {"install": {"commands": 1, "exit_code": 0, "duration_s": 1.0, "timed_out": False},
              "test": {"command": "pytest", "exit_code": 1, "duration_s": 1.0, "timed_out": False}}
    world.builds.uploads = archive_of({layout.RESULT_FILE: json.dumps(result).encode(), **documents})
    run_id, error = _verify(world)

    assert "exited 1" in str(error)
    [test_run] = [t for t in world.ledger.load(run_id).test_runs.values() if t.stage == Stage.VERIFY]
    assert test_run.report is not None
    counts = test_run.report["counts"]
    assert len(counts["failing"]) == MAX_FAILING_NAMES
    assert counts["failing_omitted"] == counts["failed"] - MAX_FAILING_NAMES > 0
    names = [*counts["failing"], *counts["by_package"], *counts["files"], *counts["unreadable"]]
    assert max(map(len, names)) == MAX_NAME_CHARS and all(name.endswith("…") for name in counts["failing"])
    assert len(counts["by_package"]) == MAX_PACKAGES + 1  # the rest counted together under "…"
    assert len(counts["files"]) + len(counts["unreadable"]) == JUNIT_FILE_COUNT_LIMIT
    assert any(name.startswith("a") for name in counts["unreadable"])  # named, not read: past the total
    sizes = [len(json.dumps(item, default=str).encode()) for item in world.ledger.items(run_id)]
    assert max(sizes) < DYNAMODB_ITEM_LIMIT_BYTES, max(sizes)


JACOCO = (b'<report name="shapes"><counter type="LINE" missed="4" covered="4"/>'
          b'<counter type="BRANCH" missed="5" covered="3"/></report>')


def _with_jacoco(archive: bytes) -> bytes:
    """The build's upload with a JaCoCo report where the driver collects it."""
    members = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar:
            extracted = tar.extractfile(member)
            if extracted is not None:
                members[member.name] = extracted.read()
    return archive_of({**members, f"{layout.COVERAGE_DIR}/target__site__jacoco__jacoco.xml": JACOCO})


def test_a_succeeded_build_s_jacoco_coverage_is_reported_and_shown(world: World) -> None:
    world.builds.uploads, world.builds.ends = _with_jacoco(results_archive("pass")), BuildStatus.SUCCEEDED
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    assert world.stage(Stage.VERIFY, run_id, execution)["done"]
    report = json.loads(_outputs(world, run_id)["command.json"])
    assert report["coverage"]["lines_covered"] == 4 and report["coverage"]["branches"] == 8
    shown = world.service.view(run_id)["summary"]["tests"]
    assert shown["coverage"] == "lines 50% (4 of 8), branches 38% (3 of 8), from 1 JaCoCo report"


def test_a_failed_build_s_coverage_is_not_believed_either(world: World) -> None:
    world.builds.uploads, world.builds.ends = _with_jacoco(results_archive("pass")), BuildStatus.FAILED
    run_id, _ = _verify(world)
    assert json.loads(_outputs(world, run_id)["command.json"])["coverage"] is None


def test_a_build_that_could_not_start_says_why_as_the_build_service_said_it(world: World) -> None:
    world.builds.outcome, world.builds.uploads = "no_upload", None
    world.builds.says = "INSTALL phase: the build's sandbox could not start the install phase: a mount failed"
    run_id, error = _verify(world)
    assert "a mount failed" in str(error)
    [test_run] = [t for t in world.ledger.load(run_id).test_runs.values() if t.stage == Stage.VERIFY]
    assert test_run.failure == world.builds.says
    assert b"a mount failed" in _outputs(world, run_id)["test-output.txt"]  # what the reviewer reads in its place


@pytest.mark.parametrize(("printed", "says"), [
    ("ERROR: usage: python -m pytest [options] [file_or_dir]\npython -m pytest: error: unrecognized arguments: "
     "--cov=parse --cov-report=term\n",
     "the suite could not start: pytest does not know --cov, an option of a plugin the project does not "
     'declare; declare it in agentledger.toml, e.g. install = ["python -I -m pip install . pytest pytest-cov"]'),
    ("ImportError while loading conftest '/w/tests/conftest.py'.\ntests/conftest.py:3: in <module>\n    import "
     "freezegun.api\nE   ModuleNotFoundError: No module named 'freezegun'\n",
     "the suite could not start: it imports freezegun, which nothing installed; declare it in agentledger.toml, "
     'e.g. install = ["python -I -m pip install . pytest freezegun"]'),
])
def test_a_suite_that_could_not_start_says_what_it_lacked_and_how_to_declare_it(
    world: World, printed: str, says: str,
) -> None:
    result = {"install": {"commands": 1, "exit_code": 0, "duration_s": 1, "timed_out": False, "cache_hit": True},
              "test": {"command": "python -m pytest", "exit_code": 4, "duration_s": 1, "timed_out": False},
              "junit_files": []}
    world.builds.uploads = archive_of({layout.RESULT_FILE: json.dumps(result).encode(),
                                       layout.OUTPUT_FILE: printed.encode()})

    _, error = _verify(world)

    assert str(error) == f"the test command exited 4: {says}; see test-output.txt"
