"""The verify stage's test build on the in-memory adapters: one build per set of inputs, polled
until it ends, found again after a crash, and read into results a person can act on."""
from __future__ import annotations

import io
import tarfile
from typing import TYPE_CHECKING, Any

import pytest

from agentledger.buildkit import layout
from agentledger.errors import (
    NoTestsRanError,
    TestConfigurationError,
    VerificationFailedError,
)
from agentledger.faults import SimulatedCrash
from agentledger.models import BuildRequest, Stage, StageStatus
from agentledger.restart import classify
from agentledger.testing.world import World, build_world
from agentledger.testrun.layout import build_timeout_minutes
from agentledger.workflow import builds
from agentledger.workflow.verification import read_output_archive

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def _to_verify(world: World) -> tuple[str, str]:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    return run_id, execution


def _artifact(world: World, run_id: str, name: str) -> Any:
    ledger = world.ledger.load(run_id)
    [ref] = [a for a in ledger.artifacts if a.name == name and a.key in ledger.stages["verify"].outputs]
    return world.artifacts.get_json(ref) if name.endswith(".json") else world.artifacts.get(ref)


def test_verify_starts_one_build_and_is_polled_until_it_ends(world: World) -> None:
    world.builds.polls_before_done = 1
    run_id, execution = _to_verify(world)
    looks = world.builds.looks
    outcomes = [world.workflow.run_stage(Stage.VERIFY, run_id, execution) for _ in range(3)]

    assert [o["done"] for o in outcomes] == [False, False, True]
    assert all(o["poll_after_s"] >= 2 for o in outcomes[:2])
    assert len(world.builds.verifies) == 1
    # The first call started the build and left the look to the wait parked on it; each later one looked once.
    assert world.builds.looks - looks == 2
    ledger = world.ledger.load(run_id)
    assert ledger.stages["verify"].status == StageStatus.COMPLETE
    assert ledger.stages["verify"].attempt == 1  # polls are not attempts
    assert "test_run" in ledger.evidence
    results = _artifact(world, run_id, "test-results.json")
    assert (results["tests"], results["passed"], results["failed"]) == (2, 2, 0)
    report = _artifact(world, run_id, "command.json")
    assert report["outcome"] == "passed" and report["counts"]["passed"] == 2
    assert _artifact(world, run_id, "test-config.json")["ecosystem"] == "python"


def test_verify_reads_the_written_tests_only_to_start_its_build(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.builds.polls_before_done = 1
    run_id, execution = _to_verify(world)
    read: list[str] = []
    get = world.artifacts.get
    monkeypatch.setattr(world.artifacts, "get", lambda ref: read.append(ref.name) or get(ref))
    assert world.stage(Stage.VERIFY, run_id, execution)["done"]  # started, then looked at twice
    assert read == ["test-files.json"]


def test_the_build_gets_grants_for_exactly_its_own_input_and_output(world: World) -> None:
    run_id, execution = _to_verify(world)
    world.workflow.run_stage(Stage.VERIFY, run_id, execution)
    [request] = world.builds.verifies
    [test_run] = [t for t in world.ledger.load(run_id).test_runs.values() if t.stage == Stage.VERIFY]
    assert request.input_url.endswith(test_run.input.key)
    assert request.output_grant["fields"] == {"key": test_run.output_key}
    assert request.output_grant["max_bytes"] == layout.OUTPUT_ARCHIVE_LIMIT_BYTES
    assert request.test_run == f"{run_id}/{test_run.digest}#1"
    # The input is the repository with the tests written in, plus the kit and the configuration.
    with tarfile.open(fileobj=io.BytesIO(world.artifacts.objects[test_run.input.key])) as archive:
        names = set(archive.getnames())
    assert {layout.KIT_ENTRY_FILE, f"{layout.KIT_DIR}/driver.py", layout.CONFIG_FILE, "repository/textkit/slug.py",
            "repository/pyproject.toml"} <= names
    assert any(name.startswith("repository/tests/test_") and name.endswith("_generated.py") for name in names)
    assert layout.PROGRESS_GRANT_KEY not in request.output_grant  # only a build that writes tests reports steps


def test_a_build_refused_at_the_concurrent_build_limit_is_started_by_a_later_poll_once(
        world: World, crash_once: Any) -> None:
    run_id, execution = _to_verify(world)
    world.builds.refusals = 2
    # Reached only once a build runs and the ledger holds its id: not while the service refuses it.
    crash_once("build_running")
    outcomes = [world.workflow.run_stage(Stage.VERIFY, run_id, execution) for _ in range(2)]
    assert [o["done"] for o in outcomes] == [False, False]
    # Parked until a build ends and frees room, or for a first look seconds later.
    assert all(o["poll_after_s"] == builds.ROOM_FIRST_LOOK_SECONDS for o in outcomes)
    assert not world.builds.verifies
    with pytest.raises(SimulatedCrash):
        world.workflow.run_stage(Stage.VERIFY, run_id, execution)

    assert world.workflow.run_stage(Stage.VERIFY, run_id, execution)["done"]
    assert len(world.builds.verifies) == 1
    stage = world.ledger.load(run_id).stages["verify"]
    assert (stage.status, stage.attempt) == (StageStatus.COMPLETE, 1)  # not a failure, nor a person's


def test_a_crash_while_the_build_runs_finds_the_same_build_again(world: World, crash_once: Any) -> None:
    world.builds.polls_before_done = 1
    run_id, execution = _to_verify(world)
    crash_once("build_running")
    with pytest.raises(SimulatedCrash):
        world.workflow.run_stage(Stage.VERIFY, run_id, execution)
    while not world.workflow.run_stage(Stage.VERIFY, run_id, execution)["done"]:
        pass
    assert len(world.builds.verifies) == 1
    assert world.ledger.load(run_id).stages["verify"].status == StageStatus.COMPLETE


def test_a_first_attempt_starts_its_build_without_searching_the_build_history(world: World) -> None:
    run_id, execution = _to_verify(world)
    assert world.stage(Stage.VERIFY, run_id, execution)["done"]
    assert (len(world.builds.verifies), world.builds.searches) == (1, 0)


def test_a_build_started_whose_id_was_never_recorded_is_found_not_started_twice(world: World) -> None:
    run_id, execution = _to_verify(world)
    builds = world.builds
    original = builds.start

    def start_then_die(request: BuildRequest) -> str:
        original(request)
        raise SimulatedCrash("killed before CodeBuild's answer was recorded")

    builds.start = start_then_die  # type: ignore[method-assign]
    with pytest.raises(SimulatedCrash):
        world.workflow.run_stage(Stage.VERIFY, run_id, execution)
    builds.start = original  # type: ignore[method-assign]
    assert world.stage(Stage.VERIFY, run_id, execution)["done"]
    assert len(builds.verifies) == 1 and builds.searches == 1


def test_a_crash_after_the_results_were_read_reuses_them(world: World, crash_once: Any) -> None:
    run_id, execution = _to_verify(world)
    crash_once("after_artifacts")
    with pytest.raises(SimulatedCrash):
        world.stage(Stage.VERIFY, run_id, execution)
    assert world.workflow.run_stage(Stage.VERIFY, run_id, execution)["done"]
    assert len(world.builds.verifies) == 1


@pytest.mark.parametrize(("outcome", "error", "says"), [
    ("fail", VerificationFailedError, "exited 1: 1 failed, 0 errored of 2"),
    ("timeout", VerificationFailedError, "killed after the 900 s timeout"),
    ("no_tests", NoTestsRanError, "exited 0 but executed no test"),
    ("nothing_collected", NoTestsRanError, "exited 5 but executed no test"),
    ("install_timeout", VerificationFailedError, "installing the repository's dependencies was killed after the 900 s"),
    ("no_upload", VerificationFailedError, "test build failed: the build uploaded no results"),
])
def test_what_is_not_a_pass_is_recorded_and_raised(world: World, outcome: str, error: type, says: str) -> None:
    world.builds.outcome = outcome  # type: ignore[assignment]
    run_id, execution = _to_verify(world)
    with pytest.raises(error, match=says):
        world.stage(Stage.VERIFY, run_id, execution)
    ledger = world.ledger.load(run_id)
    assert ledger.stages["verify"].status == StageStatus.FAILED
    assert "test_run" not in ledger.evidence
    assert _artifact(world, run_id, "command.json")["passed"] is False


def test_an_empty_suite_is_handed_to_a_person_with_the_reason() -> None:
    verdict = classify("NoTestsRanError", "", 0, 3)
    assert verdict.action == "handoff" and "no test executed" in verdict.reason


def test_an_invalid_repository_configuration_stops_the_first_build_with_the_file_and_key(world: World) -> None:
    (world.repo / "agentledger.toml").write_text("timeout = 'soon'\n")
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    with pytest.raises(TestConfigurationError, match="agentledger.toml.*timeout"):
        world.workflow.run_stage(Stage.EXECUTE, run_id, execution)
    assert world.builds.started == []


def test_a_timeout_above_the_deployment_limit_is_refused_before_any_build(world: World) -> None:
    (world.repo / "agentledger.toml").write_text("timeout = 7200\n")
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    with pytest.raises(TestConfigurationError, match="7200 s test timeout.*at most 3600 s"):
        world.workflow.run_stage(Stage.EXECUTE, run_id, execution)
    assert world.builds.started == []


@pytest.mark.parametrize(("line", "refusal"), [
    ('compute = "BUILD_GENERAL1_2XLARGE"',
     "compute BUILD_GENERAL1_2XLARGE; this deployment allows BUILD_GENERAL1_SMALL, BUILD_GENERAL1_MEDIUM, "
     "BUILD_GENERAL1_LARGE"),
    ('image = "ghcr.io/someone/miner:latest"', "image ghcr.io/someone/miner:latest; this deployment allows "
                                               "aws/codebuild/standard:7.0"),
])
def test_a_compute_or_image_the_deployment_does_not_allow_is_refused_with_the_list(
        world: World, line: str, refusal: str) -> None:
    (world.repo / "agentledger.toml").write_text(line + "\n")
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    with pytest.raises(TestConfigurationError) as refused:
        world.workflow.run_stage(Stage.EXECUTE, run_id, execution)
    assert refusal in str(refused.value)
    assert world.builds.started == []


def test_the_build_timeout_covers_install_and_tests_within_codebuild_bounds() -> None:
    assert build_timeout_minutes(60) == 13  # the install, the project's install and the tests, and a margin
    assert build_timeout_minutes(1) == 11
    assert build_timeout_minutes(8 * 3600) == 1450
    assert build_timeout_minutes(100 * 3600) == 2160


def test_an_uploaded_archive_is_read_with_bounds_and_anything_unexpected_is_ignored() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in {"../escape.txt": b"x", "junit/a.xml": b"<testsuite/>", "output.txt": b"tail"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    contents = read_output_archive(buffer.getvalue())
    assert contents.result is None and "no result.json" in (contents.problem or "")
    assert contents.junit == {"a.xml": b"<testsuite/>"} and contents.output == "tail"
    assert "not a readable archive" in (read_output_archive(b"not a tarball").problem or "")



def test_a_generation_builds_timeout_covers_its_budget_and_each_of_its_runs() -> None:
    assert build_timeout_minutes(60, 600, runs=5) == 10 + (17 * 60 + 600) // 60
    assert build_timeout_minutes(60, 600, runs=20) - build_timeout_minutes(60, 600, runs=5) == 15
