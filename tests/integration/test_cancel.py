"""`cancel` stops a run for good: the decision is recorded first, its execution is stopped, and
nothing moves the run on afterwards (no stage, no review, no resume, no effect)."""
from __future__ import annotations

import pytest

from tests.stack_driver import OPERATOR

pytestmark = pytest.mark.integration


def _abandoned(runtime, execution):
    return any(event.get("stateEnteredEventDetails", {}).get("name") == "Superseded by a newer execution"
               for event in runtime.execution_history(execution))


def _cancellations(view):
    return [d for d in view["decisions"] if d["kind"] == "cancelled"]


def test_a_run_cancelled_while_its_stages_run_stops_there_and_nothing_moves_it_on(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    execution = f"{run_id}-start"

    cancelled = driver.cancel(run_id, "the ticket was withdrawn")
    assert cancelled.status == 200, cancelled.body
    assert cancelled.json() == {"run_id": run_id, "status": "cancelled", "stopped_execution": execution,
                                "reason": "the ticket was withdrawn"}
    # Stopped (ABORTED); or, when a stage was under way, ended first by that stage itself: it found the
    # run cancelled, and the execution was abandoned before the stop reached it.
    ended = runtime.wait_for_execution(execution, timeout_s=60)
    assert ended == "ABORTED" or (ended == "FAILED" and _abandoned(runtime, execution)), ended

    view = driver.view(run_id)
    assert (view["run"]["status"], view["run"]["state"]) == ("cancelled", "cancelled")
    [decision] = _cancellations(view)
    assert decision["actor"] == OPERATOR and decision["summary"] == "the ticket was withdrawn"
    assert view["transitions"][-1]["to_state"] == "cancelled"
    assert not view["effects"]
    assert not [name for name, stage in view["stages"].items() if stage["status"] == "running"]

    assert driver.cancel(run_id, "again").json() == cancelled.json()  # a repeated cancel gets the first answer
    refused = driver.resume(run_id)
    assert refused.status == 409 and "cancelled" in refused.json()["message"]
    assert driver.view(run_id)["run"]["version"] == view["run"]["version"]  # neither wrote anything


def test_a_run_cancelled_at_review_cannot_be_approved_and_opens_no_pull_request(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    waiting = driver.wait(run_id)
    digest = waiting["review"]["plan_digest"]

    assert driver.cancel(run_id).json()["reason"] == f"cancelled by {OPERATOR}"
    assert runtime.wait_for_execution(f"{run_id}-start", timeout_s=60) == "ABORTED"
    assert driver.review(run_id, plan_digest=digest).status == 409
    runtime.run_review_keeper()  # a pass of the keeper leaves a cancelled run alone

    view = driver.view(run_id)
    assert view["run"]["status"] == "cancelled" and len(_cancellations(view)) == 1
    assert [effect["kind"] for effect in view["effects"].values()] == ["review_notification"]  # sent at review
    assert not [key for key in runtime.github.pulls_by_key() if key.startswith(f"{run_id}/")]


def test_a_complete_run_is_past_cancelling(driver, runtime, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run_id = driver.start(empty)
    assert driver.wait(run_id)["run"]["status"] == "complete"
    refused = driver.cancel(run_id)
    assert refused.status == 409 and "past cancelling" in refused.json()["message"]
    assert driver.view(run_id)["run"]["status"] == "complete"
