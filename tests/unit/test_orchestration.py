"""Workflow, RunService and EffectRunner on the in-memory adapters: the stage protocol, skipping
on valid evidence, invalidation, handoff, reviews and effect reconciliation, with no moto."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest

from agentledger.api_contract import SOURCE_KINDS
from agentledger.errors import (
    EffectUnconfirmedError,
    ReviewRejectedError,
    RunConflictError,
    StaleContextError,
    SupersededExecutionError,
)
from agentledger.models import Handoff, RunStatus, Stage, StageStatus
from agentledger.service import CreateRunRequest, ReviewRequest
from agentledger.testing.effects import DROP_RESPONSE, UNAVAILABLE
from agentledger.testing.world import OPERATOR, REQUESTER, REVIEWER, TOKEN, UP_TO_REVIEW, World, build_world
from tests.samples import EDITED_FILE, edit_sample_repository

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def test_each_stage_commits_its_record_evidence_and_artifacts_through_to_completion(world: World) -> None:
    run_id, execution = world.to_review()
    ledger = world.ledger.load(run_id)
    assert ledger.run.status == RunStatus.AWAITING_REVIEW
    assert set(ledger.evidence) == {"source_tree", "plan", "test_changes", "test_run"}
    for stage in UP_TO_REVIEW:
        record = ledger.stages[stage.value]
        assert record.status == StageStatus.COMPLETE and record.outputs
        assert all(key in world.artifacts.objects for key in record.outputs)

    world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=ledger.run.plan_digest), REVIEWER)
    assert world.executions.answered("success")[0][1] == TOKEN
    world.workflow.run_stage(Stage.COMPLETE, run_id, execution)
    done = world.ledger.load(run_id)
    assert done.run.status == RunStatus.COMPLETE
    assert set(done.evidence) >= {"approval", "summary"}


def test_a_stage_with_valid_evidence_is_skipped_and_its_work_not_redone(world: World) -> None:
    run_id, execution = world.create()
    world.workflow.run_stage(Stage.INSPECT, run_id, execution)
    again = world.workflow.run_stage(Stage.INSPECT, run_id, execution)
    assert again["skipped"] is True
    assert world.agent.calls["inspect"] == 1


def test_an_edit_to_a_file_the_plan_read_invalidates_the_plan_once_and_restarts_at_inspect(world: World) -> None:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    edit_sample_repository(world.repo)

    assessment = world.workflow.assess(run_id, execution)
    assert assessment["next"] == "inspect"
    ledger = world.ledger.load(run_id)
    rejected = [d for d in ledger.decisions if d.kind == "stale_plan_rejected"]
    assert len(rejected) == 1
    assert EDITED_FILE in rejected[0].details["changed_files"]["modified"]
    assert {ledger.stages[s].status for s in ("inspect", "plan", "execute")} == {StageStatus.INVALIDATED}
    world.workflow.assess(run_id, execution)
    assert len([d for d in world.ledger.load(run_id).decisions if d.kind == "stale_plan_rejected"]) == 1


def test_a_stage_whose_upstream_went_stale_refuses_to_run(world: World) -> None:
    run_id, execution = world.create()
    world.workflow.run_stage(Stage.INSPECT, run_id, execution)
    world.workflow.run_stage(Stage.PLAN, run_id, execution)
    edit_sample_repository(world.repo)
    with pytest.raises(StaleContextError, match="inspect is not valid"):
        world.workflow.run_stage(Stage.EXECUTE, run_id, execution)
    assert world.agent.calls["execute"] == 0


def test_an_execution_that_no_longer_owns_the_run_is_refused(world: World) -> None:
    run_id, _ = world.create()
    with pytest.raises(SupersededExecutionError):
        world.workflow.run_stage(Stage.INSPECT, run_id, "someone-else")


def test_an_unknown_failure_hands_the_run_to_a_person_with_a_complete_record(world: World) -> None:
    run_id, execution = world.create()
    world.workflow.run_stage(Stage.INSPECT, run_id, execution)
    verdict = world.workflow.classify(run_id, execution, {"Error": "KeyError", "Cause": '{"errorMessage": "boom"}'},
                                      failed_stage="plan")
    assert verdict["action"] == "handoff"
    ledger = world.ledger.load(run_id)
    assert ledger.run.status == RunStatus.NEEDS_PERSON
    handoff = Handoff.model_validate(next(d for d in ledger.decisions if d.kind == "handoff").details)
    assert handoff.attempted.stage == Stage.PLAN
    assert handoff.response.error == "KeyError" and handoff.response.message == "boom"
    assert handoff.partial_effect.complete_stages == [Stage.INSPECT]
    assert run_id in handoff.recovery
    assert world.metrics.counts["RunsHandedOff"] == 1


def test_the_review_keeper_heartbeats_a_valid_review_and_fails_a_stale_one(world: World) -> None:
    run_id, _ = world.to_review()
    assert world.workflow.keep_reviews_alive()["heartbeats"] == 1
    edit_sample_repository(world.repo)
    assert world.workflow.keep_reviews_alive()["stale_failed"] == 1
    assert world.executions.answered("failure") == [("failure", TOKEN, "StaleContextError")]


def test_an_approval_that_arrives_after_the_plan_went_stale_names_the_file_that_changed(world: World) -> None:
    run_id, execution = world.to_review()
    digest = world.ledger.get_run(run_id).plan_digest
    edit_sample_repository(world.repo)
    world.workflow.keep_reviews_alive()
    world.workflow.classify(run_id, execution, {"Error": "StaleContextError"}, "await_review")
    world.run(run_id, execution, Stage.INSPECT)  # the execution replans: the run is running again
    assert world.ledger.get_run(run_id).status == RunStatus.RUNNING

    with pytest.raises(ReviewRejectedError) as refused:
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest or ""), REVIEWER)

    assert "is not waiting for review" in str(refused.value) and "textkit/slug.py" in str(refused.value)


def test_an_approval_of_another_plan_or_of_a_stale_plan_is_refused(world: World) -> None:
    run_id, _ = world.to_review()
    with pytest.raises(ReviewRejectedError, match="not sha256:old"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest="sha256:old"), REVIEWER)
    edit_sample_repository(world.repo)
    current = world.ledger.get_run(run_id).plan_digest
    with pytest.raises(ReviewRejectedError, match="stale"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=current), REVIEWER)
    assert world.executions.answered("failure")  # the waiting execution is woken to replan


def test_one_idempotency_key_names_one_run_and_refuses_another_body(world: World) -> None:
    first, _ = world.create("same")
    second, _ = world.create("same")
    assert first == second
    assert world.executions.started == {f"{first}-start": 2}  # the same name: one execution
    with pytest.raises(RunConflictError):
        world.service.create(CreateRunRequest(repository=str(world.repo), request="something else"), "same", REQUESTER)


def test_repeated_resumes_start_one_execution(world: World) -> None:
    run_id, execution = world.create()
    world.workflow.classify(run_id, execution, {"Error": "KeyError"}, failed_stage="inspect")
    first = world.service.resume(run_id, OPERATOR)
    second = world.service.resume(run_id, OPERATOR)
    assert first["execution"] == second["execution"] == f"{run_id}-resume-1"
    assert world.ledger.get_run(run_id).resumes == 1


def test_a_ticket_is_written_once_and_confirmed(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    outcome = world.effects.deliver(run_id, execution, "ticket")
    assert outcome["status"] == "confirmed"
    assert world.effects.deliver(run_id, execution, "ticket")["status"] == "confirmed"
    assert world.tracker.copies(outcome["key"]) == 1 and world.tracker.writes == 1


def test_a_lost_response_is_reconciled_without_a_second_write(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(DROP_RESPONSE)
    with pytest.raises(EffectUnconfirmedError):
        world.effects.deliver(run_id, execution, "ticket")
    outcome = world.effects.deliver(run_id, execution, "ticket")  # the state machine's retry
    assert outcome["status"] == "confirmed"
    assert world.tracker.writes == 1 and world.tracker.copies(outcome["key"]) == 1
    assert world.ledger.load(run_id).effects[outcome["key"]].duplicates_suppressed == 1


def test_an_error_answer_is_looked_for_then_sent_again_once(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(UNAVAILABLE)
    with pytest.raises(Exception, match="not delivered"):
        world.effects.deliver(run_id, execution, "ticket")
    outcome = world.effects.deliver(run_id, execution, "ticket")
    assert outcome["status"] == "confirmed" and world.tracker.copies(outcome["key"]) == 1


def test_an_effect_without_a_receiver_is_skipped_and_recorded(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    assert world.effects.deliver(run_id, execution, "completion_notification")["status"] == "skipped"
    assert any(d.kind == "effect_skipped" for d in world.ledger.load(run_id).decisions)


def test_the_execute_workspace_is_removed_once_its_files_are_artifacts(world: World) -> None:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    workspace = world.settings.workspace_root / run_id / "execute"
    assert not workspace.exists()
    ledger = world.ledger.load(run_id)
    files = world.artifacts.get_json(next(r for r in ledger.artifacts if r.name == "test-files.json"))
    assert files  # the written tests outlive their workspace


def test_a_workspace_a_failed_attempt_left_is_kept_until_it_expires(world: World) -> None:
    root = world.settings.workspace_root
    left = root / "run-00000000000000000001" / "execute"
    (left / "pkg").mkdir(parents=True)
    (left / "pkg" / "half_written.py").write_text("x = 1\n")
    recent = root / "run-00000000000000000002" / "execute"
    recent.mkdir(parents=True)
    day_old = time.time() - world.settings.workspace_retention_s - 60
    os.utime(left.parent, (day_old, day_old))

    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)  # the next run's execute sweeps
    assert not left.parent.exists()
    assert recent.exists()  # a handed-off run's workspace stays for its person until the retention ends
    assert not (root / run_id).exists()


def test_a_run_on_a_directory_says_its_source_is_read_in_place_and_can_go_stale(world: World) -> None:
    run_id, _ = world.create()

    assert world.service.view(run_id)["summary"]["source"] == SOURCE_KINDS["directory"]
