"""Workflow on the in-memory adapters, beyond the happy path test_orchestration.py walks: a
failing test run, resuming after a handoff, a review answered while its task was retried, a
change request, and the replan limit."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentledger.errors import StaleContextError, SupersededExecutionError, VerificationFailedError
from agentledger.models import ArtifactRef, Handoff, RunStatus, Stage, StageStatus
from agentledger.service import ReviewRequest
from agentledger.testing.effects import InMemoryTracker
from agentledger.testing.world import OPERATOR, REVIEWER, TOKEN, UP_TO_REVIEW, World, build_world
from tests.samples import edit_sample_repository

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def _committed(world: World, run_id: str, stage: Stage, name: str) -> ArtifactRef:
    ledger = world.ledger.load(run_id)
    [ref] = [a for a in ledger.artifacts if a.name == name and a.key in ledger.stages[stage.value].outputs]
    return ref


def _handoffs(world: World, run_id: str) -> list[Handoff]:
    return [Handoff.model_validate(d.details) for d in world.ledger.load(run_id).decisions if d.kind == "handoff"]


def test_a_failing_test_run_commits_its_output_but_no_evidence_and_is_handed_to_a_person(world: World) -> None:
    world.builds.outcome = "fail"
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    with pytest.raises(VerificationFailedError):
        world.stage(Stage.VERIFY, run_id, execution)

    ledger = world.ledger.load(run_id)
    verify = ledger.stages["verify"]
    assert verify.status == StageStatus.FAILED and "exited 1" in (verify.error or "")
    assert "test_run" not in ledger.evidence  # a failed run is no evidence the review could rest on
    output = _committed(world, run_id, Stage.VERIFY, "test-output.txt")
    assert world.artifacts.get(output) == b"fail\n"  # the person can read what failed

    verdict = world.workflow.classify(run_id, execution, {"Error": "VerificationFailedError",
                                                          "Cause": '{"errorMessage": "test command exited with 1"}'},
                                      failed_stage="verify")
    assert verdict["action"] == "handoff"
    [handoff] = _handoffs(world, run_id)
    assert handoff.attempted.stage == Stage.VERIFY and handoff.attempted.attempt == 1
    # (listed in ledger key order, not stage order; the set is what matters to the person)
    assert set(handoff.partial_effect.complete_stages) == {Stage.INSPECT, Stage.PLAN, Stage.EXECUTE}
    assert world.ledger.get_run(run_id).status == RunStatus.NEEDS_PERSON


def test_a_handoff_names_what_the_failed_stage_stored_and_did_not_commit(world: World) -> None:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    stored = world.artifacts.put_text(run_id, Stage.PLAN, "draft.txt", "half a plan")  # then the plan stage died
    world.artifacts.put_text(f"{run_id}0", Stage.PLAN, "draft.txt", "another run's")
    world.workflow.classify(run_id, execution, {"Error": "KeyError"}, failed_stage="plan")
    [handoff] = _handoffs(world, run_id)
    assert handoff.partial_effect.uncommitted_artifacts == [stored.key]


def test_a_resumed_run_keeps_its_valid_stages_and_the_old_execution_is_shut_out(world: World) -> None:
    world.builds.outcome = "fail"
    run_id, first = world.create()
    world.run(run_id, first, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    with pytest.raises(VerificationFailedError):
        world.stage(Stage.VERIFY, run_id, first)
    world.workflow.classify(run_id, first, {"Error": "VerificationFailedError"}, failed_stage="verify")

    world.builds.outcome = "pass"  # the person fixed the cause
    second = world.service.resume(run_id, OPERATOR)["execution"]
    assert world.workflow.assess(run_id, second)["next"] == "verify"
    with pytest.raises(SupersededExecutionError):
        world.workflow.run_stage(Stage.VERIFY, run_id, first)
    assert world.workflow.classify(run_id, first, {"Error": "TransientError"})["action"] == "abandon"

    world.run(run_id, second, *UP_TO_REVIEW, Stage.AWAIT_REVIEW)
    assert world.agent.calls == {"inspect": 1, "plan": 1, "execute": 1}
    # The resume is a person asking for the suite again: a second build of the same inputs.
    assert len(world.builds.verifies) == 2
    world.approve(run_id)
    world.run(run_id, second, Stage.COMPLETE)
    assert world.ledger.get_run(run_id).status == RunStatus.COMPLETE
    assert world.metrics.counts["RunsRecovered"] == 1
    assert world.workflow.assess(run_id, second)["next"] == "done"


def test_an_approval_the_task_missed_is_redelivered_to_the_retried_review_task(world: World) -> None:
    run_id, execution = world.to_review()
    world.executions.live_tokens = set()  # the waiting task timed out before the reviewer answered
    assert world.approve(run_id)["delivered"] is False

    world.executions.live_tokens = {"task-token-2"}
    retried = world.workflow.run_stage(Stage.AWAIT_REVIEW, run_id, execution, "task-token-2")
    assert retried["skipped"] is True  # the approval stands; no second review request
    assert world.workflow.keep_reviews_alive()["approvals_redelivered"] == 1
    (_, _, sent), (_, token, redelivered) = world.executions.answered("success")
    assert token == "task-token-2"
    assert redelivered == sent == {"decision": "approve", "plan_digest": world.ledger.get_run(run_id).plan_digest}


def test_a_change_request_sends_the_run_back_to_plan(world: World) -> None:
    run_id, execution = world.to_review()
    digest = world.ledger.get_run(run_id).plan_digest
    change_request = ReviewRequest(decision="request_changes", plan_digest=digest, comment="cover slug")
    world.service.review(run_id, change_request, REVIEWER)
    assert world.executions.answered("success")[-1][1:] == (TOKEN, {"decision": "request_changes",
                                                                    "plan_digest": digest})
    ledger = world.ledger.load(run_id)
    assert ledger.stages["plan"].status == StageStatus.INVALIDATED
    assert "cover slug" in (ledger.stages["await_review"].error or "")

    assert world.workflow.assess(run_id, execution)["next"] == "plan"
    with pytest.raises(StaleContextError):
        world.workflow.run_stage(Stage.COMPLETE, run_id, execution)


def test_a_context_that_keeps_going_stale_is_handed_to_a_person_after_the_replan_limit(tmp_path: Path) -> None:
    world = build_world(tmp_path, max_replans=1)
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    edit_sample_repository(world.repo)
    assert world.workflow.assess(run_id, execution)["next"] == "inspect"
    assert world.ledger.get_run(run_id).replans == 1

    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    (world.repo / "textkit" / "slug.py").write_text("def slugify(text):\n    return text\n")
    assert world.workflow.assess(run_id, execution)["next"] == "needs_person"
    run = world.ledger.get_run(run_id)
    assert run.status == RunStatus.NEEDS_PERSON
    [handoff] = _handoffs(world, run_id)
    assert handoff.kind == "stale_context" and handoff.response.error == "StaleContextError"


def test_every_committed_change_leaves_a_transition_in_stage_order(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.run(run_id, execution, Stage.COMPLETE)
    ledger = world.ledger.load(run_id)
    moves = [(t.from_state.value, t.to_state.value) for t in ledger.transitions]
    assert moves == [("created", "created"), ("created", "inspect"), ("inspect", "plan"), ("plan", "execute"),
                     ("execute", "verify"), ("verify", "await_review"), ("await_review", "complete")]
    assert [t.version for t in ledger.transitions] == sorted(t.version for t in ledger.transitions)
    summary = world.artifacts.get_json(_committed(world, run_id, Stage.COMPLETE, "summary.json"))
    assert summary["approved_by_review"]["decision"] == "approve"
    assert "task_token" not in summary["approved_by_review"]


def test_the_review_notification_goes_out_on_the_entry_its_stage_made_reading_nothing_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = build_world(tmp_path, receivers={"notifications": InMemoryTracker()})
    run_id, execution = world.create()
    world.run(run_id, execution, *UP_TO_REVIEW)
    reads: list[str] = []
    sources = world.workflow.entrance.sources
    load, snapshot = world.ledger.load, sources.snapshot
    monkeypatch.setattr(world.ledger, "load", lambda run: reads.append("ledger") or load(run))
    monkeypatch.setattr(sources, "snapshot", lambda repo: reads.append("repo") or snapshot(repo))

    outcome, entry = world.workflow.request_review(run_id, execution, TOKEN)
    notified = world.effects.deliver(run_id, execution, "review_notification", entry=entry)

    assert (outcome["status"], notified["status"]) == (RunStatus.AWAITING_REVIEW, "confirmed")
    assert reads == ["ledger", "repo"]  # the stage's entry, and nothing for the notification's


def test_the_summary_shows_verify_s_report_from_the_ledger_reading_no_artifact(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id, execution = world.ready_to_complete()
    read: list[str] = []
    get = world.artifacts.get
    monkeypatch.setattr(world.artifacts, "get", lambda ref: read.append(ref.name) or get(ref))
    world.run(run_id, execution, Stage.COMPLETE)
    assert read == []
    monkeypatch.undo()
    summary = world.artifacts.get_json(_committed(world, run_id, Stage.COMPLETE, "summary.json"))
    assert summary["tests"] == world.artifacts.get_json(_committed(world, run_id, Stage.VERIFY, "command.json"))
