"""Failures: the restart policy's verdict on each (replan, abandon, hand off), and the handoff
record that tells a person what was attempted, what came back and what partly happened."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentledger.records import new_decision

from .. import metric_names
from ..artifacts import stage_prefix
from ..models import (
    WORK_STAGES,
    EffectSummary,
    Handoff,
    HandoffAttempt,
    HandoffResponse,
    Ledger,
    PartialEffect,
    Record,
    Run,
    RunState,
    RunStatus,
    Stage,
    StageRecord,
    StageStatus,
    seconds_between,
    utc_now,
)
from ..restart import classify, parse_cause
from ..states import DecisionKind, RecoveryAction

if TYPE_CHECKING:
    from ..ports import ArtifactPort, LedgerPort, MetricSink


@dataclass(frozen=True)
class Failure:
    """What came back from the work that failed."""

    error: str
    message: str
    cause: dict[str, Any] = field(default_factory=dict)


class Handoffs:
    def __init__(self, ledger: LedgerPort, artifacts: ArtifactPort, metrics: MetricSink, max_replans: int) -> None:
        self.ledger = ledger
        self.artifacts = artifacts
        self.metrics = metrics
        self.max_replans = max_replans

    def classify(self, run_id: str, execution: str, error: dict[str, Any],
                 failed_stage: str | None = None) -> dict[str, Any]:
        """The ClassifyFailure state: what the state machine does after a Catch."""
        ledger = self.ledger.load(run_id)
        run = ledger.run
        name = str(error.get("Error") or "Unknown")
        cause = parse_cause(error.get("Cause"))
        if run.active_execution and run.active_execution != execution:
            return {"run_id": run_id, "action": RecoveryAction.ABANDON, "reason": "a newer execution owns this run"}
        if run.status == RunStatus.CANCELLED:
            return {"run_id": run_id, "action": RecoveryAction.ABANDON, "reason": "the run was cancelled"}
        if run.status == RunStatus.COMPLETE:
            return {"run_id": run_id, "action": RecoveryAction.DONE, "reason": "the run completed before the failure"}
        verdict = classify(name, cause.get("errorMessage", ""), run.replans, self.max_replans, failed_stage)
        if verdict.action in (RecoveryAction.REPLAN, RecoveryAction.ABANDON):
            details = {"error": name, "cause": cause, "action": verdict.action}
            self.ledger.append(run_id, new_decision(DecisionKind.RECOVERY, verdict.reason, details, execution))
            return {"run_id": run_id, "action": verdict.action, "reason": verdict.reason}
        self.hand_off(ledger, execution, Failure(name, cause.get("errorMessage", name), cause), kind=verdict.kind,
                      why=verdict.reason, failed_stage=failed_stage)
        return {"run_id": run_id, "action": RecoveryAction.HANDOFF, "reason": verdict.reason}

    def hand_off(self, ledger: Ledger, execution: str, failure: Failure, *, kind: str, why: str | None = None,
                 failed_stage: str | None = None, extra: tuple[Record, ...] = ()) -> Run:
        """End the run in needs_person with what a person needs to pick it up."""
        run = ledger.run
        where = failed_stage or run.state.value  # the state machine says which stage failed
        stage = Stage(where) if where in Stage._value2member_map_ else None
        record = ledger.stages.get(stage.value) if stage else None
        handoff = self._handoff(ledger, execution, failure, kind, stage, record)
        decision = new_decision(DecisionKind.HANDOFF, f"{stage or 'run'} needs a person: {why or failure.message}",
                                handoff.model_dump(mode="json"), execution)
        records: list[Record] = [decision, *extra]
        if record is not None and record.status == StageStatus.RUNNING:
            records.append(record.model_copy(update={"status": StageStatus.FAILED, "finished_at": utc_now(),
                                                     "error": f"{failure.error}: {failure.message}"}))
        handed = self.ledger.write(run, to_state=RunState.NEEDS_PERSON, status=RunStatus.NEEDS_PERSON,
                                   records=records, execution=execution, reason=f"handed to a person: {failure.error}")
        self.metrics.count(metric_names.RUNS_HANDED_OFF)
        self.metrics.seconds(metric_names.TIME_TO_HANDOFF, seconds_between(handoff.failed_at, handoff.handoff_at))
        return handed

    def _handoff(self, ledger: Ledger, execution: str, failure: Failure, kind: str, stage: Stage | None,
                 record: StageRecord | None) -> Handoff:
        run = ledger.run
        committed = ledger.committed_keys()
        written = self.artifacts.list_keys(stage_prefix(run.run_id, stage)) if stage else []
        return Handoff(
            kind=kind,
            attempted=HandoffAttempt(stage=stage, attempt=record.attempt if record else 0, execution=execution,
                                     operation=f"{stage} stage" if stage else "restart assessment",
                                     started_at=record.started_at if record else None),
            response=HandoffResponse(error=failure.error, message=failure.message, cause=failure.cause),
            partial_effect=PartialEffect(
                complete_stages=[stage for stage in WORK_STAGES if stage.value in ledger.stages
                                 and ledger.stages[stage.value].status == StageStatus.COMPLETE],
                uncommitted_artifacts=sorted(k for k in written if k not in committed),
                external_effects=[EffectSummary(key=e.key, kind=e.kind, status=e.status, receiver_id=e.receiver_id,
                                                attempts=e.attempts, error=e.error) for e in ledger.effects.values()],
            ),
            recovery=(f"fix the cause, then resume (POST /runs/{run.run_id}/resume or `agentledger resume`): "
                      "complete stages with valid evidence are kept, stale ones are redone"),
            # When the failing attempt began: the last time the ledger heard from the work that failed.
            failed_at=record.started_at if record is not None and record.started_at else run.updated_at,
            handoff_at=utc_now(),
        )
