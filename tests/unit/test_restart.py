"""The restart policy: which evidence still holds, what a restart does next, and how each
failure is classified."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from agentledger.evidence import EVIDENCE_OF
from agentledger.models import Ledger, Stage, StageStatus
from agentledger.restart import (
    MISSING,
    STALE,
    VALID,
    assess,
    classify,
    evaluate_evidence,
    is_stage_valid,
    parse_cause,
)
from agentledger.states import NextAction
from tests.unit import builders as b

if TYPE_CHECKING:
    from agentledger.source import SourceSnapshot

pytestmark = pytest.mark.unit

MAX_REPLANS = 2
ALL_STAGES = list(Stage)
DOWNSTREAM_OF_PLAN = ["test_changes", "test_run", "approval", "summary"]


def statuses_of(ledger: Ledger, snap: SourceSnapshot) -> dict[str, str]:
    return {name: status.status for name, status in evaluate_evidence(ledger, snap, b.read_manifest).items()}


# -- a run that nothing disturbed --------------------------------------------------------------
def test_a_complete_ledger_against_the_same_source_is_all_valid() -> None:
    ledger, snap = b.ledger(), b.snapshot()
    assert statuses_of(ledger, snap) == {EVIDENCE_OF[stage]: VALID for stage in Stage}
    statuses = evaluate_evidence(ledger, snap, b.read_manifest)
    assert all(is_stage_valid(ledger, stage, statuses) for stage in Stage)


def test_a_complete_ledger_against_the_same_source_is_done() -> None:
    assessment = assess(b.ledger(), b.snapshot(), MAX_REPLANS, b.read_manifest)
    assert assessment.next == NextAction.DONE
    assert assessment.complete == ALL_STAGES
    assert assessment.invalidated == []
    assert assessment.changed_files == {}


def test_evidence_is_reported_in_stage_order() -> None:
    assessment = assess(b.ledger(), b.snapshot(), MAX_REPLANS, b.read_manifest)
    assert [e.name for e in assessment.evidence] == [EVIDENCE_OF[stage] for stage in Stage]


# -- the source changed while the run was paused -------------------------------------------------
def test_modifying_a_file_the_plan_read_makes_the_tree_and_the_plan_stale_naming_the_file() -> None:
    ledger, snap = b.ledger(), b.edited("calc.py", "def add(a, b):\n    return b + a\n")
    statuses = evaluate_evidence(ledger, snap, b.read_manifest)
    assert statuses["source_tree"].status == STALE
    assert "calc.py" in statuses["source_tree"].reason
    assert statuses["plan"].status == STALE
    assert "calc.py" in statuses["plan"].reason
    assert "modified" in statuses["plan"].reason


def test_everything_downstream_of_a_stale_plan_is_stale_because_its_upstream_is() -> None:
    ledger, snap = b.ledger(), b.edited("calc.py", "changed = True\n")
    statuses = evaluate_evidence(ledger, snap, b.read_manifest)
    for name in DOWNSTREAM_OF_PLAN:
        assert statuses[name].status == STALE, name
        assert "which is stale" in statuses[name].reason, name
    assert "depends on plan" in statuses["test_changes"].reason
    assert "depends on approval" in statuses["summary"].reason


def test_modifying_a_file_the_plan_read_sends_the_run_back_to_inspect() -> None:
    assessment = assess(b.ledger(), b.edited("calc.py", "changed = True\n"), MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.INSPECT.value
    assert assessment.complete == []
    assert assessment.invalidated == ALL_STAGES
    assert assessment.changed_files == {"modified": ["calc.py"]}
    assert "calc.py" in assessment.reason


def test_invalidated_lists_only_the_stages_that_were_complete() -> None:
    ledger = b.ledger(through=Stage.VERIFY)
    assessment = assess(ledger, b.edited("calc.py", "changed = True\n"), MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.INSPECT.value
    assert assessment.invalidated == [Stage.INSPECT, Stage.PLAN, Stage.EXECUTE, Stage.VERIFY]


def test_a_file_the_plan_did_not_read_makes_the_plan_stale_only_through_the_source_tree() -> None:
    statuses = evaluate_evidence(b.ledger(), b.edited("util.py", "def helper():\n    return 2\n"), b.read_manifest)
    assert statuses["source_tree"].status == STALE
    assert "util.py" in statuses["source_tree"].reason
    assert statuses["plan"].status == STALE
    assert statuses["plan"].reason == "depends on source_tree, which is stale"


def test_adding_a_file_makes_the_source_tree_stale() -> None:
    snap = b.snapshot({**b.FILES, "new_module.py": "x = 1\n"})
    statuses = evaluate_evidence(b.ledger(), snap, b.read_manifest)
    assert statuses["source_tree"].status == STALE
    assert statuses["source_tree"].reason == "added: new_module.py"
    # The plan never read the new file: it is stale only because what it was built on is.
    assert statuses["plan"].reason == "depends on source_tree, which is stale"
    assessment = assess(b.ledger(), snap, MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.INSPECT.value
    assert assessment.changed_files == {"added": ["new_module.py"]}


def test_an_added_file_alone_does_not_affect_evidence_that_does_not_read_the_tree() -> None:
    # The plan, alone, with its upstream still valid: a new file is not its concern.
    ledger = b.ledger(through=Stage.PLAN)
    snap = b.snapshot({**b.FILES, "new_module.py": "x = 1\n"})
    ledger.evidence["source_tree"] = b.evidence_chain(snap)["source_tree"]
    ledger.evidence["plan"] = ledger.evidence["plan"].model_copy(update={"depends_on": {
        **ledger.evidence["plan"].depends_on, "evidence:source_tree": ledger.evidence["source_tree"].fingerprint}})
    assert statuses_of(ledger, snap)["plan"] == VALID


def test_removing_a_file_is_reported_as_removed() -> None:
    snap = b.without("calc.py")
    statuses = evaluate_evidence(b.ledger(), snap, b.read_manifest)
    assert statuses["source_tree"].reason == "removed: calc.py"
    assert "removed: calc.py" in statuses["plan"].reason
    assessment = assess(b.ledger(), snap, MAX_REPLANS, b.read_manifest)
    assert assessment.changed_files == {"removed": ["calc.py"]}
    assert assessment.next == Stage.INSPECT.value


def test_a_revision_change_is_reported_even_when_no_file_changed() -> None:
    snap = b.snapshot(revision="rev-2")
    statuses = evaluate_evidence(b.ledger(), snap, b.read_manifest)
    assert statuses["source_tree"].status == STALE
    assert "revision moved from rev-1 to rev-2" in statuses["source_tree"].reason
    assert "revision moved from rev-1 to rev-2" in statuses["plan"].reason
    assessment = assess(b.ledger(), snap, MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.INSPECT.value
    assert assessment.changed_files == {}


def test_several_kinds_of_change_are_all_reported() -> None:
    contents = {p: t for p, t in b.FILES.items() if p != "util.py"}
    snap = b.snapshot({**contents, "calc.py": "changed = 1\n", "new_module.py": ""})
    assessment = assess(b.ledger(), snap, MAX_REPLANS, b.read_manifest)
    assert assessment.changed_files == {"modified": ["calc.py"], "added": ["new_module.py"],
                                        "removed": ["util.py"]}


# -- evidence recorded again upstream ------------------------------------------------------------
def test_evidence_recorded_again_upstream_makes_downstream_stale() -> None:
    ledger, snap = b.ledger(), b.snapshot()
    ledger.evidence["plan"] = ledger.evidence["plan"].model_copy(update={"fingerprint": "sha256:plan-2"})
    statuses = evaluate_evidence(ledger, snap, b.read_manifest)
    assert statuses["source_tree"].status == VALID
    assert statuses["plan"].status == VALID
    assert statuses["test_changes"].status == STALE
    assert statuses["test_changes"].reason == "plan was recorded again since"
    assert statuses["approval"].status == STALE  # it approved the old plan
    assessment = assess(ledger, snap, MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.EXECUTE.value
    assert assessment.complete == [Stage.INSPECT, Stage.PLAN]
    assert assessment.invalidated == [Stage.EXECUTE, Stage.VERIFY, Stage.AWAIT_REVIEW, Stage.COMPLETE]
    assert assessment.changed_files == {}


def test_an_approval_of_an_older_test_run_is_stale() -> None:
    ledger = b.ledger()
    ledger.evidence["test_run"] = ledger.evidence["test_run"].model_copy(update={"fingerprint": "sha256:run-2"})
    statuses = evaluate_evidence(ledger, b.snapshot(), b.read_manifest)
    assert statuses["test_run"].status == VALID
    assert statuses["approval"].status == STALE
    assert "test_run was recorded again since" in statuses["approval"].reason
    assert assess(ledger, b.snapshot(), MAX_REPLANS, b.read_manifest).next == Stage.AWAIT_REVIEW.value


# -- stages not done yet -------------------------------------------------------------------------
def test_a_missing_stage_is_next_and_nothing_is_invalidated() -> None:
    ledger = b.ledger(through=Stage.PLAN)
    assessment = assess(ledger, b.snapshot(), MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.EXECUTE.value
    assert assessment.complete == [Stage.INSPECT, Stage.PLAN]
    assert assessment.invalidated == []
    assert "execute" in assessment.reason
    assert statuses_of(ledger, b.snapshot())["test_changes"] == MISSING


def test_an_empty_ledger_starts_with_inspect() -> None:
    ledger = b.ledger(through=None)
    assessment = assess(ledger, b.snapshot(), MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.INSPECT.value
    assert assessment.complete == []
    assert assessment.invalidated == []
    assert set(statuses_of(ledger, b.snapshot()).values()) == {MISSING}


@pytest.mark.parametrize("status", [StageStatus.RUNNING, StageStatus.FAILED, StageStatus.INVALIDATED])
def test_a_stage_with_valid_evidence_but_not_complete_is_redone(status: StageStatus) -> None:
    ledger = b.ledger(through=Stage.VERIFY)
    ledger.stages["verify"] = ledger.stages["verify"].model_copy(update={"status": status})
    statuses = evaluate_evidence(ledger, b.snapshot(), b.read_manifest)
    assert statuses["test_run"].status == VALID
    assert not is_stage_valid(ledger, Stage.VERIFY, statuses)
    assessment = assess(ledger, b.snapshot(), MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.VERIFY.value
    assert assessment.complete == [Stage.INSPECT, Stage.PLAN, Stage.EXECUTE]
    assert assessment.invalidated == []


def test_a_complete_stage_whose_evidence_was_never_recorded_is_not_valid() -> None:
    ledger = b.ledger(through=Stage.EXECUTE)
    del ledger.evidence["test_changes"]
    statuses = evaluate_evidence(ledger, b.snapshot(), b.read_manifest)
    assert statuses["test_changes"].status == MISSING
    assert not is_stage_valid(ledger, Stage.EXECUTE, statuses)
    assert assess(ledger, b.snapshot(), MAX_REPLANS, b.read_manifest).next == Stage.EXECUTE.value


# -- going stale again and again -----------------------------------------------------------------
@pytest.mark.parametrize("replans", [MAX_REPLANS, MAX_REPLANS + 3])
def test_stale_again_after_the_replan_limit_needs_a_person(replans: int) -> None:
    snap = b.edited("calc.py", "changed = True\n")
    assessment = assess(b.ledger(replans=replans), snap, MAX_REPLANS, b.read_manifest)
    assert assessment.next == NextAction.NEEDS_PERSON
    # The person still learns what changed and what is no longer valid.
    assert assessment.invalidated == ALL_STAGES
    assert assessment.changed_files == {"modified": ["calc.py"]}
    assert str(replans) in assessment.reason


def test_stale_below_the_replan_limit_replans() -> None:
    assessment = assess(b.ledger(replans=MAX_REPLANS - 1), b.edited("calc.py", "x = 1\n"), MAX_REPLANS, b.read_manifest)
    assert assessment.next == Stage.INSPECT.value


def test_the_replan_limit_does_not_stop_a_run_that_is_merely_unfinished() -> None:
    assessment = assess(b.ledger(through=Stage.PLAN, replans=MAX_REPLANS + 1), b.snapshot(), MAX_REPLANS,
                        b.read_manifest)
    assert assessment.next == Stage.EXECUTE.value


def test_the_replan_limit_does_not_stop_a_finished_run() -> None:
    assessment = assess(b.ledger(replans=MAX_REPLANS + 1), b.snapshot(), MAX_REPLANS, b.read_manifest)
    assert assessment.next == NextAction.DONE


# -- classifying failures ------------------------------------------------------------------------
@pytest.mark.parametrize("replans", [0, MAX_REPLANS - 1, MAX_REPLANS])
def test_stale_context_replans_while_within_the_limit(replans: int) -> None:
    verdict = classify("StaleContextError", "plan is stale", replans, MAX_REPLANS)
    assert (verdict.kind, verdict.action) == ("stale_context", "replan")


def test_stale_context_beyond_the_limit_is_handed_off() -> None:
    verdict = classify("StaleContextError", "plan is stale", MAX_REPLANS + 1, MAX_REPLANS)
    assert (verdict.kind, verdict.action) == ("stale_context", "handoff")
    assert str(MAX_REPLANS + 1) in verdict.reason


def test_a_superseded_execution_abandons_quietly() -> None:
    verdict = classify("SupersededExecutionError", "", 0, MAX_REPLANS)
    assert (verdict.kind, verdict.action) == ("superseded", "abandon")


@pytest.mark.parametrize("error", ["Runtime.ExitError", "TransientError", "Lambda.ServiceException",
                                   "Lambda.TooManyRequestsException", "ConcurrentModificationError",
                                   "EffectFailedError", "EffectInProgressError", "Sandbox.Timedout",
                                   "Lambda.Unknown", "States.Timeout"])
def test_a_retryable_error_that_outlived_its_retries_is_handed_off_as_retryable(error: str) -> None:
    verdict = classify(error, "boom", 0, MAX_REPLANS)
    assert (verdict.kind, verdict.action) == ("retryable", "handoff")
    assert error in verdict.reason


@pytest.mark.parametrize("error", ["States.Timeout", "States.HeartbeatTimeout"])
def test_a_review_nobody_answered_in_time_needs_a_person(error: str) -> None:
    verdict = classify(error, "", 0, MAX_REPLANS, failed_stage="await_review")
    assert (verdict.kind, verdict.action) == ("needs_person", "handoff")
    assert "nobody answered in time" in verdict.reason


@pytest.mark.parametrize("stage", ["inspect", "verify", "complete"])
def test_a_stage_function_that_ran_out_of_time_is_transient(stage: str) -> None:
    for error in ("States.Timeout", "Sandbox.Timedout"):
        verdict = classify(error, "Task timed out after 60.00 seconds", 0, MAX_REPLANS, failed_stage=stage)
        assert (verdict.kind, verdict.action) == ("retryable", "handoff")


@pytest.mark.parametrize("error", ["VerificationFailedError", "EffectUnconfirmedError", "EffectRejectedError"])
def test_failures_a_retry_cannot_fix_need_a_person(error: str) -> None:
    verdict = classify(error, "", 0, MAX_REPLANS)
    assert (verdict.kind, verdict.action) == ("needs_person", "handoff")


def test_an_unconfirmed_effect_tells_the_person_not_to_resend_blindly() -> None:
    verdict = classify("EffectUnconfirmedError", "", 0, MAX_REPLANS)
    assert "check the receiver" in verdict.reason


@pytest.mark.parametrize("error", ["KeyError", "States.TaskFailed", "Unknown", ""])
def test_an_unknown_error_is_handed_to_a_person_by_name(error: str) -> None:
    verdict = classify(error, "", 0, MAX_REPLANS)
    assert (verdict.kind, verdict.action) == ("needs_person", "handoff")
    assert f"unclassified error {error}" in verdict.reason


# -- the Cause Step Functions hands over ----------------------------------------------------------
def test_parse_cause_reads_a_lambda_error_payload() -> None:
    payload = {"errorMessage": "plan is stale", "errorType": "StaleContextError", "stackTrace": ["a", "b"]}
    assert parse_cause(json.dumps(payload)) == payload


def test_parse_cause_keeps_plain_text_as_the_message() -> None:
    assert parse_cause("Task timed out after 900.00 seconds") == {
        "errorMessage": "Task timed out after 900.00 seconds"}


@pytest.mark.parametrize("cause", ['"a json string"', "[1, 2]", "42", "null"])
def test_parse_cause_keeps_json_that_is_not_an_object_as_the_message(cause: str) -> None:
    assert parse_cause(cause) == {"errorMessage": cause}


@pytest.mark.parametrize("cause", ["", None])
def test_parse_cause_of_nothing_is_empty(cause: str | None) -> None:
    assert parse_cause(cause) == {}


def test_after_a_reviewer_requests_changes_the_reason_says_so_and_no_replan_bound_applies() -> None:
    snap = b.snapshot()
    reviewed = b.ledger(snap, through=Stage.AWAIT_REVIEW, replans=3)
    reviewed.stages[Stage.PLAN.value] = reviewed.stages[Stage.PLAN.value].model_copy(
        update={"status": StageStatus.INVALIDATED})
    result = assess(reviewed, snap, 3, b.read_manifest)
    assert result.next == "plan"
    assert "plan was invalidated" in result.reason
    assert "no longer valid" not in result.reason


# -- what the ledger keeps of the files read -------------------------------------------------------
class CountingManifests:
    """The manifest reads an evaluation makes, counted (each is an S3 GET on AWS)."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self, ref):
        self.reads += 1
        return b.read_manifest(ref)


def test_no_ledger_item_lists_the_files_it_read() -> None:
    ledger = b.ledger()
    for evidence in ledger.evidence.values():
        assert not [key for key in evidence.depends_on if "/" in key or key.endswith(".py")]


def test_an_unchanged_tree_is_judged_without_reading_a_manifest() -> None:
    manifests = CountingManifests()
    statuses = evaluate_evidence(b.ledger(), b.snapshot(), manifests)
    assert {status.status for status in statuses.values()} == {VALID}
    assert manifests.reads == 0


def test_a_changed_tree_reads_the_manifests_to_name_what_changed() -> None:
    manifests = CountingManifests()
    statuses = evaluate_evidence(b.ledger(), b.edited("util.py", "def helper():\n    return 2\n"), manifests)
    assert statuses["source_tree"].reason == "modified: util.py"
    assert statuses["plan"].reason == "depends on source_tree, which is stale"  # calc.py, all it read, is as it was
    assert manifests.reads == 2


def test_evidence_whose_manifest_is_gone_is_stale_and_says_why() -> None:
    ledger = b.ledger()
    ledger.artifacts = []
    statuses = evaluate_evidence(ledger, b.edited("calc.py", "x = 2\n"), b.read_manifest)
    assert statuses["source_tree"].status == STALE
    assert "list of files it read" in statuses["source_tree"].reason
    assert statuses["plan"].status == STALE


def test_thousands_of_changed_files_are_named_in_bounded_space_and_counted() -> None:
    added = {f"data/file_{n:05}.txt": f"{n}\n" for n in range(5000)}
    snap = b.snapshot({**b.FILES, **added})
    statuses = evaluate_evidence(b.ledger(), snap, b.read_manifest)
    assert statuses["source_tree"].reason.endswith("data/file_00009.txt and 4,990 more")
    assert len(statuses["source_tree"].reason) < 500
    assessment = assess(b.ledger(), snap, MAX_REPLANS, b.read_manifest)
    assert assessment.changed_file_counts == {"added": 5000}
    assert len(assessment.changed_files["added"]) == 50
