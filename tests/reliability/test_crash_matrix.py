"""Interruption as an acceptance case: every stage × every crash point. The crash kills the
handler like a dead process (no except/finally runs) on every attempt of the first execution,
so the retries are exhausted and the execution fails as on AWS; a resume must answer what is
complete, what evidence holds and what is safe next, and finish without redoing valid work."""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentledger.faults import STAGE_CRASH_POINTS
from agentledger.models import Stage
from tests import counting_agent

pytestmark = pytest.mark.reliability

ORDER = [stage.value for stage in Stage]
STAGES_WITH_WORK = ("inspect", "plan", "execute", "verify")


def _work_runs(stage: str, repo, run_id: str, runtime) -> int:
    """How often a stage's real work ran: the agent's calls, or for execute and verify the builds started."""
    if stage in ("execute", "verify"):
        return len(runtime.codebuild.builds_for(run_id, stage))
    return counting_agent.calls(stage, repo if stage in ("inspect", "plan") else f"{run_id}/{stage}")


@pytest.mark.parametrize("point", STAGE_CRASH_POINTS)
@pytest.mark.parametrize("stage", ORDER)
def test_crash_then_resume_completes_without_redoing_valid_work(driver, runtime, sample_repo, stage, point):
    run_id = driver.start(sample_repo, crash=f"{stage}:{point}")
    first = f"{run_id}-start"
    if stage == "complete":
        driver.wait(run_id)
        assert driver.review(run_id).status == 200
    assert driver.finished(first) in ("FAILED", "SUCCEEDED")
    crashed = driver.view(run_id)
    before = ORDER[: ORDER.index(stage)]

    if stage == "complete" and point == "after_commit":
        # The summary was committed before the crash; the classifier sees a complete run.
        assert runtime.execution_status(first) == "SUCCEEDED"
        assert crashed["run"]["status"] == "complete"
        assert crashed["stages"]["complete"]["attempt"] == 1
        return

    assert runtime.execution_status(first) == "FAILED"
    assert crashed["run"]["status"] == "needs_person"
    handoff = crashed["handoff"]
    assert handoff["details"]["attempted"]["stage"] == stage
    assert handoff["details"]["response"]["error"] == "Runtime.ExitError"
    assert set(handoff["details"]["partial_effect"]["complete_stages"]) >= set(before)
    assert handoff["details"]["recovery"].startswith("fix the cause, then resume")

    resumed = driver.resume(run_id)
    assert resumed.status == 200, resumed.body
    assessment = resumed.json()["assessment"]
    committed = point == "after_commit" and stage != "await_review"
    expected_complete = before + ([stage] if committed else [])
    assert assessment["complete"] == expected_complete
    evidence = {e["name"]: e["status"] for e in assessment["evidence"]}
    valid = [name for name, status in evidence.items() if status == "valid"]
    assert len(valid) == len(expected_complete)
    assert assessment["next"] == ORDER[len(expected_complete)]

    settled = driver.wait(run_id, execution=resumed.json()["execution"])
    if settled["run"]["status"] == "awaiting_review":
        assert driver.review(run_id).status == 200
    assert driver.finished(resumed.json()["execution"]) == "SUCCEEDED"

    done = driver.view(run_id)
    assert done["run"]["status"] == "complete"
    for name in expected_complete:
        assert done["stages"][name]["attempt"] == 1, f"{name} ran again after the resume"
        if name in STAGES_WITH_WORK:
            assert _work_runs(name, sample_repo, run_id, runtime) == 1, f"{name}'s work ran more than once"
    assert {e["status"] for e in done["evidence_status"].values()} == {"valid"}

    s3, bucket = runtime.client("s3"), runtime.output("ArtifactBucketName")
    for artifact in done["artifacts"]:
        body = s3.get_object(Bucket=bucket, Key=artifact["key"])["Body"].read()
        assert hashlib.sha256(body).hexdigest() == artifact["sha256"]
    kinds = [d["kind"] for d in done["decisions"]]
    assert "handoff" in kinds and "resume" in kinds


def test_repeated_and_concurrent_resumes_start_one_execution(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo, crash="plan:after_artifacts")
    driver.finished(f"{run_id}-start")
    with ThreadPoolExecutor(max_workers=4) as pool:
        responses = list(pool.map(lambda _: driver.resume(run_id), range(4)))
    assert all(r.status == 200 for r in responses), [r.body for r in responses]
    executions = {r.json()["execution"] for r in responses}
    assert executions == {f"{run_id}-resume-1"}
    assert driver.resume(run_id).json()["execution"] == f"{run_id}-resume-1"
    listed = runtime.client("stepfunctions").list_executions(stateMachineArn=runtime.state_machine_arn)["executions"]
    names = sorted(e["name"] for e in listed if e["name"].startswith(run_id))
    assert names == [f"{run_id}-resume-1", f"{run_id}-start"]


def test_a_crash_while_the_test_build_runs_is_retried_onto_the_same_build(driver, runtime, sample_repo):
    """The build's id is in the ledger before the crash, so the retry polls that build instead of
    starting a second one, and no person is needed."""
    run_id = driver.start(sample_repo, crash="verify:build_running")
    settled = driver.wait(run_id)

    assert runtime.crashes.interruptions(run_id) == 1
    assert settled["run"]["status"] == "awaiting_review", settled["run"]
    [build] = runtime.codebuild.builds_for(run_id)
    assert build.record["buildStatus"] == "SUCCEEDED"
    [test_run] = [t for t in settled["test_runs"].values() if t["stage"] == "verify"]
    assert (test_run["build_id"], test_run["status"]) == (build.build_id, "SUCCEEDED")
