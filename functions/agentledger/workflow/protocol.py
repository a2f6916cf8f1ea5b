"""The stage protocol: every stage checks ownership and freshness on entry (so no retry,
redrive, resume or late approval acts on stale context), is skipped when complete with valid
evidence, records its start, does its work, stores artifacts, and commits stage + evidence +
artifact records in one versioned transaction. Evidence is evaluated once per entry."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from agentledger.records import new_decision

from .. import faults, metric_names
from ..errors import StaleContextError, SupersededExecutionError
from ..evidence import EVIDENCE_OF
from ..freshness import Entrance, EntryContext, invalidate, require_fresh_upstream
from ..models import (
    WORK_STAGES,
    Ledger,
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
from ..states import DecisionKind, NextAction
from .handoff import Failure, Handoffs
from .reviews import ReviewKeeper
from .stages import StageContext, StageWork

if TYPE_CHECKING:
    from ..agent import Agent
    from ..config import WorkflowSettings
    from ..ports import ArtifactPort, BuildPort, ExecutionPort, LedgerPort, MetricSink, SourcePort

# The stages whose work runs in a build the state machine comes back to look at.
BUILD_STAGES = (Stage.EXECUTE, Stage.VERIFY)


class Workflow:
    def __init__(self, settings: WorkflowSettings, ledger: LedgerPort, artifacts: ArtifactPort, sources: SourcePort,
                 agent: Agent, executions: ExecutionPort | None, metrics: MetricSink,
                 builds: BuildPort | None) -> None:
        self.settings = settings
        self.ledger = ledger
        self.artifacts = artifacts
        self.sources = sources
        self.metrics = metrics
        self.executions = executions
        self.work = StageWork(settings, ledger, artifacts, agent, builds, metrics)
        self.handoffs = Handoffs(ledger, artifacts, metrics, settings.max_replans)
        self.entrance = Entrance(sources, artifacts.read_manifest, settings.max_replans)

    # -- the Assess state ------------------------------------------------------------------
    def assess(self, run_id: str, execution: str) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        _require_owner(ledger.run, execution)
        entry = self.entrance.enter(ledger)
        assessment = entry.assessment
        run = invalidate(self.ledger, entry, execution, self.metrics)
        decision = new_decision(DecisionKind.ASSESSMENT, assessment.reason, assessment.model_dump(mode="json"),
                                execution)
        if assessment.next == NextAction.NEEDS_PERSON:
            stale = Failure(StaleContextError.__name__, assessment.reason)
            self.handoffs.hand_off(self.ledger.load(run_id), execution, stale, kind="stale_context", extra=(decision,))
        elif assessment.next == NextAction.DONE and run.status != RunStatus.COMPLETE:
            self.ledger.write(run, status=RunStatus.COMPLETE, records=[decision], execution=execution,
                              reason="every stage complete with valid evidence")
        else:
            self.ledger.append(run_id, decision)
        return {"run_id": run_id, "next": assessment.next, "reason": assessment.reason,
                "outcome": run.outcome or "", "artifacts": self.artifacts.location(run_id)}

    # -- the stage states ------------------------------------------------------------------
    def run_stage(self, stage: Stage, run_id: str, execution: str, task_token: str | None = None) -> dict[str, Any]:
        return self._run_stage(stage, run_id, execution, task_token)[0]

    def request_review(self, run_id: str, execution: str,
                       task_token: str | None) -> tuple[dict[str, Any], EntryContext]:
        """The await_review stage, and the entry it ran on: the review notification, sent by the same
        invocation, goes out on that entry instead of reading the ledger and the repository again."""
        return self._run_stage(Stage.AWAIT_REVIEW, run_id, execution, task_token)

    def _run_stage(self, stage: Stage, run_id: str, execution: str,
                   task_token: str | None) -> tuple[dict[str, Any], EntryContext]:
        ledger = self.ledger.load(run_id)
        _require_owner(ledger.run, execution)
        entry = self.entrance.enter(ledger)
        if entry.holds(stage):
            if stage == Stage.AWAIT_REVIEW and task_token and ledger.review is not None:
                # Approved while this task was being retried: keep the decision, hand the review
                # keeper the live token so it answers this task with it.
                carried = ledger.review.model_copy(update={"task_token": task_token})
                self.ledger.write(ledger.run, records=[carried], execution=execution,
                                  reason="approval carried over to the retried review task")
            # The ledger holds this stage's commit and the handler has not returned yet.
            faults.reach(run_id, stage, "after_commit", execution)
            return self._outcome(ledger.run, stage, skipped=True), entry
        require_fresh_upstream(self.ledger, entry, stage, execution, self.metrics)

        previous = ledger.stages.get(stage.value)
        if _is_poll(previous, execution, ledger, stage):
            # The state machine came back to look at work this attempt started (a test build).
            started, run = previous, ledger.run
        else:
            attempt = (previous.attempt if previous else 0) + 1
            started = StageRecord(stage=stage, status=StageStatus.RUNNING, attempt=attempt, execution=execution,
                                  started_at=utc_now(), inputs=_inputs(ledger, stage))
            run = self.ledger.write(ledger.run, to_state=RunState(stage.value), status=RunStatus.RUNNING,
                                    records=[started], execution=execution,
                                    reason=f"{stage} started (attempt {attempt})")
        faults.reach(run_id, stage, "before_work", execution)
        result = self.work.body[stage](StageContext(ledger, entry.snapshot, run, execution, task_token))
        run = result.run or run
        if result.poll_after_s is not None:
            assert result.waiting_on is not None
            # What the state machine's wait parks on: the build, or (no id yet) its place in the queue for room.
            return {**self._outcome(run, stage), "done": False, "poll_after_s": result.poll_after_s,
                    "build_id": result.waiting_on.build_id, "queued_at": result.waiting_on.created_at}, entry
        faults.reach(run_id, stage, "after_artifacts", execution)

        finished = started.model_copy(update={
            "status": result.stage_status,
            "finished_at": utc_now() if result.stage_status != StageStatus.RUNNING else None,
            "outputs": [ref.key for ref in result.artifacts],
            "error": str(result.failure) if result.failure else None,
        })
        records: list[Record] = [finished, *result.artifacts, *result.records]
        if result.evidence is not None:
            records.append(result.evidence)
        run = self.ledger.write(run, records=records, changes=result.changes, status=result.run_status,
                                execution=execution, reason=f"{stage} {result.stage_status}")
        self._report_commit(run, finished)
        faults.reach(run_id, stage, "after_commit", execution)
        if result.failure is not None:
            raise result.failure
        return self._outcome(run, stage), entry

    def _report_commit(self, run: Run, record: StageRecord) -> None:
        if record.finished_at and record.started_at:
            self.metrics.seconds(metric_names.STAGE_DURATION, seconds_between(record.started_at, record.finished_at),
                                 stage=record.stage.value)
        if run.status == RunStatus.COMPLETE and run.resumes > 0:
            self.metrics.count(metric_names.RUNS_RECOVERED)

    def _outcome(self, run: Run, stage: Stage, skipped: bool = False) -> dict[str, Any]:
        return {"run_id": run.run_id, "stage": stage.value, "skipped": skipped, "status": run.status.value,
                "outcome": run.outcome or "", "done": True, "artifacts": self.artifacts.location(run.run_id)}

    # -- the ReviewKeeper schedule and the ClassifyFailure state ---------------------------
    def keep_reviews_alive(self) -> dict[str, int]:
        if self.executions is None:
            raise RuntimeError("the review keeper needs STATE_MACHINE_ARN")
        return ReviewKeeper(self.ledger, self.entrance, self.executions, self.metrics).keep_reviews_alive()

    def classify(self, run_id: str, execution: str, error: dict[str, Any],
                 failed_stage: str | None = None) -> dict[str, Any]:
        return self.handoffs.classify(run_id, execution, error, failed_stage)


def _require_owner(run: Run, execution: str) -> None:
    if run.status == RunStatus.CANCELLED:
        raise SupersededExecutionError(f"run {run.run_id} was cancelled; execution {execution} stops here")
    if run.active_execution and run.active_execution != execution:
        raise SupersededExecutionError(
            f"execution {execution} no longer owns run {run.run_id}; {run.active_execution} does")


def _is_poll(previous: StageRecord | None, execution: str, ledger: Ledger,
             stage: Stage) -> TypeGuard[StageRecord]:
    return (previous is not None and previous.status == StageStatus.RUNNING and previous.execution == execution
            and previous.inputs == _inputs(ledger, stage) and stage in BUILD_STAGES)


def _inputs(ledger: Ledger, stage: Stage) -> dict[str, str]:
    upstream = WORK_STAGES[: WORK_STAGES.index(stage)]
    return {EVIDENCE_OF[s]: ledger.evidence[EVIDENCE_OF[s]].fingerprint for s in upstream
            if EVIDENCE_OF[s] in ledger.evidence}
