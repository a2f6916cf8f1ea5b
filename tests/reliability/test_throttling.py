"""Throttling is a transient failure and nothing is lost: with a quota binding, each service answers
as AWS does (the local runtime's throttle switchboard refuses the run's calls at the service), the
call is retried with backoff, the throttle is recorded where an operator looks, and the run
completes with every effect written once.

One run per fault, each armed for its own run's calls only, so runs of other tests on the shared
runtime neither take the throttle nor count in what is asserted."""
from __future__ import annotations

import json
import time

import pytest

from agentledger.local.metrics import emitted_metrics, summarize
from agentledger.workflow import builds
from tests.samples import write_sample_repository

pytestmark = pytest.mark.reliability

# The suite of the run that holds the build limit: its test writer's build runs it about seven times,
# long enough for another run to meet the limit.
SLOW_SUITE_S = 3
BUILD_STARTS_WITHIN_S = 120
REFUSED = 2  # within every retry budget: the SDK's four attempts, the state machine's MaxAttempts 2
# The fault, and where the throttled call is made: by a function's client, whose retries and
# report are the functions' own (the service as botocore names it in the Throttled metric); or
# by the Step Functions engine, whose refused invoke the state's Retry takes (None).
THROTTLES = {
    "stepfunctions:StartExecution": "sfn",  # the API starting the run's execution
    "dynamodb:TransactWriteItems": "dynamodb",  # the ledger's writes, the run's creation first
    "codebuild:StartBuild": "codebuild",  # verify starting the test build
    "lambda:Invoke": None,  # the engine invoking the run's first stage
}


def _throttles_reported(runtime, service):
    """As `agentledger metrics` counts them, from the functions' EMF records."""
    return summarize(emitted_metrics(runtime))["throttled_by_aws_service"].get(service, 0)


def _refused_invokes(runtime, execution):
    return [event["lambdaFunctionFailedEventDetails"] for event in runtime.execution_history(execution)
            if event["type"] == "LambdaFunctionFailed"]


@pytest.mark.parametrize(("fault", "service"), THROTTLES.items(), ids=list(THROTTLES))
def test_a_throttled_call_is_retried_and_recorded_and_the_run_completes_once(driver, runtime, sample_repo, fault,
                                                                             service):
    reported_before = _throttles_reported(runtime, service) if service else 0
    run_id = driver.start(sample_repo, throttle=f"{fault}:{REFUSED}")
    [throttle] = [t for t in runtime.throttles.armed if t.run_id == run_id]

    assert driver.wait(run_id)["run"]["status"] == "awaiting_review"
    assert driver.review(run_id).status == 200
    assert driver.finished(f"{run_id}-start") == "SUCCEEDED"

    # Refused as armed, then retried until a call went through.
    assert throttle.refused == REFUSED and throttle.passed_after >= 1
    # Recorded: by the functions as a metric by service; the engine's refused invokes in the
    # execution's history, named as the state's Retry matches them.
    if service:
        assert _throttles_reported(runtime, service) - reported_before == REFUSED
    else:
        refused = _refused_invokes(runtime, f"{run_id}-start")
        assert [event["error"] for event in refused] == ["Lambda.TooManyRequestsException"] * REFUSED
        assert "Rate Exceeded." in refused[0]["cause"]

    ledger = driver.view(run_id)
    assert ledger["run"]["status"] == "complete" and ledger["handoff"] is None
    assert {e["kind"]: e["status"] for e in ledger["effects"].values()} == {
        "review_notification": "confirmed", "pull_request": "confirmed", "ticket": "confirmed",
        "completion_notification": "confirmed"}
    # No duplicated effect: one execution, one test build, one ticket, one pull request, each
    # notification once.
    assert len(runtime.codebuild.builds_for(run_id)) == 1
    assert [n for k, n in runtime.github.issues_by_key().items() if k.startswith(f"{run_id}/")] == [1]
    assert [n for k, n in runtime.github.pulls_by_key().items() if k.startswith(f"{run_id}/")] == [1]
    assert sorted(n for k, n in runtime.notifications_by_key().items() if k and k.startswith(f"{run_id}/")) == [1, 1]
    assert ledger["run"]["executions"] == [f"{run_id}-start"]


def test_a_project_at_its_concurrent_build_limit_refuses_a_build_and_verify_starts_it_when_there_is_room(
        driver, runtime, tmp_path, monkeypatch):
    """CodeBuild refuses, not queues, a build past the project's concurrent build limit
    (`testBuildConcurrency`): the local runner does too, and verify waits for room."""
    project = runtime.output("TestBuildProjectName")
    monkeypatch.setitem(runtime.codebuild.build_limits, project, 1)
    # The waiting stage's own looks would find the room too: only the build's end may give it here.
    monkeypatch.setattr(builds, "ROOM_FIRST_LOOK_SECONDS", builds.ROOM_FALLBACK_SECONDS)
    slow = write_sample_repository(tmp_path / "slow", packaged=False)
    (slow / "tests" / "test_slow.py").write_text(f"import time\n\n\ndef test_slow():\n    time.sleep({SLOW_SUITE_S})\n")
    reported_before = _throttles_reported(runtime, "codebuild")

    holding = driver.start(slow)
    deadline = time.monotonic() + BUILD_STARTS_WITHIN_S
    while not runtime.codebuild.builds_for(holding, "execute") and time.monotonic() < deadline:
        time.sleep(0.2)
    [held] = runtime.codebuild.builds_for(holding, "execute")  # the test writer's build, which runs the suite
    waiting = driver.start(write_sample_repository(tmp_path / "quick", packaged=False))

    assert driver.wait(waiting)["run"]["status"] == "awaiting_review"
    assert driver.wait(holding)["run"]["status"] == "awaiting_review"
    assert held.done.is_set()
    assert _throttles_reported(runtime, "codebuild") > reported_before
    # Refused, then started once: never two builds of a stage.
    assert [len(runtime.codebuild.builds_for(run_id, stage)) for run_id in (holding, waiting)
            for stage in ("execute", "verify")] == [1, 1, 1, 1]
    # It waited parked, and a build's end (CodeBuild's event) gave it the room, not its own look.
    answers = [json.loads(event["taskSucceededEventDetails"]["output"])
               for event in runtime.execution_history(f"{waiting}-start") if event["type"] == "TaskSucceeded"]
    assert any("room_from" in answer for answer in answers)
