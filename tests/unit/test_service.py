"""RunService on the in-memory adapters, beyond test_orchestration.py: what the API refuses
(a repository at another revision, a second decision, resuming a run that is running or done,
a requester approving its own run), who made each write, and what a person sees (view, list)."""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import pytest

from agentledger.errors import RepositoryRejectedError, ReviewForbiddenError, ReviewRejectedError, RunConflictError
from agentledger.models import RunStatus, Stage
from agentledger.service import (
    CreateRunRequest,
    ReviewRequest,
    UploadRequest,
)
from agentledger.testing.world import OPERATOR, REQUESTER, REVIEWER, UP_TO_REVIEW, World, build_world

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def test_a_repository_at_another_revision_is_refused_and_no_run_is_started(world: World) -> None:
    body = CreateRunRequest(repository=str(world.repo), request="write tests", revision="tree:sha256:elsewhere")
    with pytest.raises(RepositoryRejectedError, match="not the requested"):
        world.service.create(body, "key-1", REQUESTER)
    assert world.ledger.list_runs()[0] == [] and not world.executions.started


def test_a_pinned_revision_that_matches_is_accepted_and_recorded(world: World) -> None:
    revision = world.workflow.sources.snapshot(str(world.repo)).revision
    created = world.service.create(CreateRunRequest(repository=str(world.repo), request="write tests",
                                                    revision=revision), "key-1", REQUESTER)
    assert created["revision"] == revision and created["status"] == "running"
    assert world.executions.started == {created["execution"]: 1}


def test_a_run_can_be_decided_once(world: World) -> None:
    run_id, _ = world.create()
    digest = "sha256:anything"
    with pytest.raises(ReviewRejectedError, match="not waiting for review"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest), REVIEWER)

    world.run(run_id, _, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE, Stage.VERIFY, Stage.AWAIT_REVIEW)
    assert world.approve(run_id)["delivered"] is True
    # The execution has not yet left the review: the refusal says it was decided, and by whom.
    with pytest.raises(ReviewRejectedError, match=f"already decided \\(approve by {REVIEWER}\\)"):
        world.service.review(run_id, ReviewRequest(decision="request_changes",
                                                   plan_digest=world.ledger.get_run(run_id).plan_digest), REVIEWER)
    assert len(world.executions.answered("success")) == 1
    assert world.ledger.load(run_id).review.decision == "approve"


def test_a_stale_review_is_recorded_as_a_rejected_plan_naming_the_changed_file(world: World) -> None:
    run_id, execution = world.to_review()
    (world.repo / "textkit" / "slug.py").write_text("def slugify(text):\n    return text\n")
    digest = world.ledger.get_run(run_id).plan_digest
    with pytest.raises(ReviewRejectedError, match="stale"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest), REVIEWER)
    [failure] = world.executions.answered("failure")
    assert failure[2] == "StaleContextError"
    ledger = world.ledger.load(run_id)
    [rejected] = [d for d in ledger.decisions if d.kind == "stale_plan_rejected"]
    assert "textkit/slug.py" in rejected.details["changed_files"]["modified"]
    assert ledger.review.decision is None  # nothing was approved
    assert world.workflow.assess(run_id, execution)["next"] == "inspect"


def test_a_run_that_is_running_or_done_is_not_resumed(world: World) -> None:
    run_id, execution = world.create()
    with pytest.raises(RunConflictError, match="already running"):
        world.service.resume(run_id, OPERATOR)  # its start execution is still RUNNING

    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE, Stage.VERIFY, Stage.AWAIT_REVIEW)
    world.approve(run_id)
    world.run(run_id, execution, Stage.COMPLETE)
    with pytest.raises(RunConflictError, match="complete"):
        world.service.resume(run_id, OPERATOR)
    assert set(world.executions.started) == {execution}


def test_a_run_whose_execution_died_while_running_is_resumed_once(world: World) -> None:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    world.executions.statuses[execution] = "FAILED"  # the execution died without reaching ClassifyFailure
    first = world.service.resume(run_id, OPERATOR)
    world.executions.statuses.pop(first["execution"])  # not visible yet: a resume repeated at once
    second = world.service.resume(run_id, OPERATOR)
    assert first == second and first["execution"] == f"{run_id}-resume-1"
    assert first["assessment"]["complete"] == ["inspect"] and first["assessment"]["next"] == "plan"
    assert world.executions.started[first["execution"]] == 2 and world.ledger.get_run(run_id).resumes == 1


def test_a_review_of_a_run_whose_repository_is_gone_is_refused_saying_why(world: World) -> None:
    run_id, _ = world.to_review()
    digest = world.ledger.get_run(run_id).plan_digest
    world.repo.rename(world.repo.with_name("moved-away"))
    with pytest.raises(RunConflictError, match="cannot be read .*restore it"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest), REVIEWER)
    assert world.ledger.load(run_id).review.decision is None


def test_a_resume_of_a_run_whose_repository_is_gone_is_refused_saying_why(world: World) -> None:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    world.executions.statuses[execution] = "FAILED"
    world.repo.rename(world.repo.with_name("moved-away"))
    with pytest.raises(RunConflictError, match="cannot be read .*restore it"):
        world.service.resume(run_id, OPERATOR)
    assert world.ledger.get_run(run_id).resumes == 0


def test_the_view_shows_evidence_status_links_and_the_handoff_but_not_the_task_token(world: World) -> None:
    run_id, execution = world.to_review()
    view = world.service.view(run_id)
    assert "task_token" not in view["review"]
    assert {name: e["status"] for name, e in view["evidence_status"].items()} == {
        "source_tree": "valid", "plan": "valid", "test_changes": "valid", "test_run": "valid",
        "approval": "missing", "summary": "missing"}
    assert all(a["url"] == f"memory://memory-bucket/{a['key']}" for a in view["artifacts"])
    assert all(a["committed"] for a in view["artifacts"])
    assert view["handoff"] is None

    world.workflow.classify(run_id, execution, {"Error": "States.HeartbeatTimeout"}, failed_stage="await_review")
    handed = world.service.view(run_id)
    assert handed["run"]["status"] == "needs_person"
    assert handed["handoff"]["details"]["response"]["error"] == "States.HeartbeatTimeout"
    assert handed["handoff"]["details"]["attempted"]["stage"] == "await_review"


def test_runs_are_listed_newest_first_and_filtered_by_status(world: World) -> None:
    first, _ = world.create("a")
    time.sleep(0.002)  # created_at has millisecond resolution
    second, execution = world.create("b")
    world.workflow.classify(second, execution, {"Error": "KeyError"}, failed_stage="inspect")
    listed = world.service.list_runs(None, 10, None)["runs"]
    assert [r["run_id"] for r in listed] == [second, first]
    waiting = world.service.list_runs(RunStatus.NEEDS_PERSON, 10, None)["runs"]
    assert [r["run_id"] for r in waiting] == [second]


# --- who did what ---------------------------------------------------------------------------------

def test_every_write_from_a_person_records_who_made_it(world: World) -> None:
    run_id, execution = world.to_review()
    world.approve(run_id)
    ledger = world.ledger.load(run_id)
    assert ledger.run.requested_by == REQUESTER
    assert ledger.review.decided_by == REVIEWER
    actors = {d.kind.value: d.actor for d in ledger.decisions if d.actor}
    assert actors == {"created": REQUESTER, "review": REVIEWER}
    assert all(d.actor is None for d in ledger.decisions if d.kind.value == "assessment")  # the workflow's own

    world.workflow.classify(run_id, execution, {"Error": "KeyError"}, failed_stage="complete")
    world.service.resume(run_id, OPERATOR)
    resumed = [d for d in world.ledger.load(run_id).decisions if d.kind.value == "resume"]
    assert [d.actor for d in resumed] == [OPERATOR]


def test_the_requester_may_not_approve_its_own_run_and_the_refusal_is_recorded(world: World) -> None:
    run_id, _ = world.to_review()
    digest = world.ledger.get_run(run_id).plan_digest
    with pytest.raises(ReviewForbiddenError, match="requested run .* may not approve it.*allowSelfApproval"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest), REQUESTER)

    ledger = world.ledger.load(run_id)
    assert ledger.run.status == RunStatus.AWAITING_REVIEW and ledger.review.decision is None
    [refused] = [d for d in ledger.decisions if d.kind.value == "review_refused"]
    assert refused.actor == REQUESTER and "separation of duties" in refused.summary
    assert world.executions.answered("success") == []
    assert world.approve(run_id)["decision"] == "approve"  # another reviewer still can


def test_a_one_person_team_can_allow_self_approval(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    world.service.settings = world.settings.model_copy(update={"allow_self_approval": True})
    run_id, _ = world.to_review()
    digest = world.ledger.get_run(run_id).plan_digest
    answer = world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest), REQUESTER)
    assert answer["delivered"] is True
    assert world.ledger.load(run_id).review.decided_by == REQUESTER


def test_the_requester_may_still_request_changes_to_its_own_run(world: World) -> None:
    run_id, _ = world.to_review()
    digest = world.ledger.get_run(run_id).plan_digest
    answer = world.service.review(run_id, ReviewRequest(decision="request_changes", plan_digest=digest,
                                                        comment="cover slugify"), REQUESTER)
    assert answer["decision"] == "request_changes"


ROLE_SESSION = "arn:aws:sts::123456789012:assumed-role/{role}/{session}"


@pytest.mark.parametrize(("reviewer", "allowed"), [
    (ROLE_SESSION.format(role="Developers", session="bob"), False),  # a session name is the caller's own choice
    (ROLE_SESSION.format(role="Developers", session="alice"), False),
    (ROLE_SESSION.format(role="Reviewers", session="alice"), True),
    ("arn:aws:iam::123456789012:user/carol", True),
])
def test_separation_of_duties_compares_an_assumed_role_by_its_role_not_its_session_name(
        world: World, reviewer: str, allowed: bool) -> None:
    requester = ROLE_SESSION.format(role="Developers", session="alice")
    created = world.service.create(CreateRunRequest(repository=str(world.repo), request="write tests"), "k", requester)
    world.run(created["run_id"], created["execution"], *UP_TO_REVIEW, Stage.AWAIT_REVIEW)
    review = ReviewRequest(decision="approve", plan_digest=world.ledger.get_run(created["run_id"]).plan_digest)
    if allowed:
        assert world.service.review(created["run_id"], review, reviewer)["decision"] == "approve"
    else:
        with pytest.raises(ReviewForbiddenError, match="as arn:aws:iam::123456789012:role/Developers"):
            world.service.review(created["run_id"], review, reviewer)


def test_an_upload_is_granted_under_the_callers_own_prefix_and_never_replaced(world: World) -> None:
    request = UploadRequest(sha256="ab" * 32, size=100)
    mine = world.service.grant_upload(request, REQUESTER)
    theirs = world.service.grant_upload(request, REVIEWER)
    assert mine["repository"] != theirs["repository"]  # same tarball, another principal: another key
    assert mine["url"] and not mine["uploaded"]

    world.artifacts.objects[mine["repository"].split("/", 3)[3]] = b"uploaded"
    again = world.service.grant_upload(request, REQUESTER)
    assert again["uploaded"] is True and again["url"] is None and again["fields"] is None
    assert again["repository"] == mine["repository"]


def test_a_run_starts_only_on_the_callers_own_upload(world: World) -> None:
    theirs = world.service.grant_upload(UploadRequest(sha256="ab" * 32, size=100), REVIEWER)["repository"]
    with pytest.raises(RepositoryRejectedError, match="uploaded by another principal"):
        world.service.create(CreateRunRequest(repository=theirs, request="write tests"), "k1", REQUESTER)
    old_form = f"s3://{world.artifacts.bucket}/repositories/{'ab' * 32}.tar.gz"
    with pytest.raises(RepositoryRejectedError, match="from before uploads were per principal"):
        world.service.create(CreateRunRequest(repository=old_form, request="write tests"), "k2", REQUESTER)


def _progress(**changed: object) -> bytes:
    document = {"step": "write", "writer": "pynguin", "module": "textkit.slug", "round": 1, "modules": 2,
                "written": 3, "dropped": 1, "elapsed_s": 12, **changed}
    return json.dumps(document).encode()


def test_while_the_execute_build_runs_the_view_shows_where_it_said_it_is_and_nothing_it_could_not_mean(
        world: World) -> None:
    world.builds.polls_before_done = 3
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    assert not world.workflow.run_stage(Stage.EXECUTE, run_id, execution)["done"]  # the build runs
    assert world.service.view(run_id)["progress"] is None  # it has said nothing yet
    [generation] = world.builds.generations
    progress_key = generation.output_grant["progress"]["fields"]["key"]
    assert progress_key.rpartition("/")[0] == generation.output_grant["fields"]["key"].rpartition("/")[0]

    world.artifacts.objects[progress_key] = _progress()
    shown = world.service.view(run_id)["progress"]
    assert shown["description"] == "pynguin writing textkit.slug · 3 written, 1 dropped so far"
    world.artifacts.objects[progress_key] = _progress(step="mutation", module=None, round=2)
    assert world.service.view(run_id)["progress"]["description"] == (
        "filter: kills a mutant the suite misses (round 2) · 3 written, 1 dropped so far")

    # The build runs the repository's code, which may write there too: what is not progress is not shown.
    for hostile in (_progress(module="x\x1b]0;owned\x07"), _progress(written=-1), b"{" + b" " * 5000 + b"}",
                    b"not json", _progress(step="rm -rf /")):
        world.artifacts.objects[progress_key] = hostile
        assert world.service.view(run_id)["progress"] is None, hostile

    world.artifacts.objects[progress_key] = _progress()
    world.stage(Stage.EXECUTE, run_id, execution)  # the build ends
    assert world.service.view(run_id)["progress"] is None
