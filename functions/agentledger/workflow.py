"""The staged workflow: what each state of the state machine does to the ledger.

Every stage follows one protocol: check ownership and freshness on entry (so no retry, redrive,
resume or late approval acts on stale context), skip when already complete with valid evidence,
record the start, do the work, store artifacts, commit stage + evidence + artifact records in one
versioned transaction."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import faults, metric_names
from .agent import Agent, Execution, Inventory, Plan, apply_files
from .agent.source import SourceSnapshot
from .artifacts import ArtifactStore
from .config import Settings
from .errors import StaleContextError, SupersededExecutionError, VerificationFailedError
from .executions import ExecutionControl
from .fingerprints import digest, sha256_bytes
from .freshness import invalidate, require_fresh_upstream, review_still_holds
from .ledger import LedgerStore, new_decision
from .models import (
    WORK_STAGES,
    ArtifactRef,
    Evidence,
    Ledger,
    Record,
    Review,
    Run,
    RunState,
    RunStatus,
    Stage,
    StageRecord,
    StageStatus,
    utc_now,
)
from .restart import (
    DONE,
    EVIDENCE_OF,
    NEEDS_PERSON,
    assess,
    classify,
    evaluate_evidence,
    is_stage_valid,
    parse_cause,
    source_dependencies,
)
from .sources import SourceResolver
from .telemetry import MetricSink, NullSink


@dataclass
class StageResult:
    artifacts: list[ArtifactRef]
    evidence: Evidence | None
    stage_status: StageStatus = StageStatus.COMPLETE
    run_status: RunStatus = RunStatus.RUNNING
    changes: dict[str, Any] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    failure: Exception | None = None


@dataclass
class StageContext:
    ledger: Ledger
    snapshot: SourceSnapshot
    run: Run
    execution: str
    task_token: str | None


class Workflow:
    def __init__(
        self,
        settings: Settings,
        ledger: LedgerStore,
        artifacts: ArtifactStore,
        sources: SourceResolver,
        agent: Agent,
        executions: ExecutionControl | None = None,
        metrics: MetricSink | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.artifacts = artifacts
        self.sources = sources
        self.agent = agent
        self.executions = executions
        self.metrics = metrics or NullSink()
        self._work: dict[Stage, Callable[[StageContext], StageResult]] = {
            Stage.INSPECT: self._inspect,
            Stage.PLAN: self._plan,
            Stage.EXECUTE: self._execute,
            Stage.VERIFY: self._verify,
            Stage.AWAIT_REVIEW: self._request_review,
            Stage.COMPLETE: self._complete,
        }

    # -- the Assess state ------------------------------------------------------------------
    def assess(self, run_id: str, execution: str) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        _require_owner(ledger.run, execution)
        snapshot = self.sources.snapshot(ledger.run.repository)
        assessment = assess(ledger, snapshot, self.settings.max_replans)
        run = invalidate(self.ledger, ledger, assessment, execution, self.metrics)
        decision = new_decision("assessment", assessment.reason, assessment.model_dump(mode="json"), execution)
        if assessment.next == NEEDS_PERSON:
            self.hand_off(self.ledger.load(run_id), execution, "StaleContextError", assessment.reason,
                          kind="stale_context", extra=[decision])
        elif assessment.next == DONE and run.status != RunStatus.COMPLETE:
            self.ledger.write(run, status=RunStatus.COMPLETE, records=[decision], execution=execution,
                              reason="every stage complete with valid evidence")
        else:
            self.ledger.append(run_id, decision)
        return {"run_id": run_id, "next": assessment.next, "reason": assessment.reason,
                "artifacts": self.artifacts.location(run_id)}

    # -- the stage states ------------------------------------------------------------------
    def run_stage(self, stage: Stage, run_id: str, execution: str, task_token: str | None = None) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        _require_owner(ledger.run, execution)
        snapshot = self.sources.snapshot(ledger.run.repository)
        statuses = evaluate_evidence(ledger, snapshot)
        if is_stage_valid(ledger, stage, statuses):
            if stage == Stage.AWAIT_REVIEW and task_token and ledger.review is not None:
                # Approved while this task was being retried: keep the decision, hand the review
                # keeper the live token so it answers this task with it.
                self.ledger.write(ledger.run, records=[ledger.review.model_copy(update={"task_token": task_token})],
                                  execution=execution, reason="approval carried over to the retried review task")
            # The ledger holds this stage's commit and the handler has not returned yet.
            faults.reach(run_id, stage, "after_commit", execution)
            return self._outcome(ledger.run, stage, skipped=True)
        require_fresh_upstream(self.ledger, ledger, snapshot, stage, execution, self.settings.max_replans,
                               self.metrics)

        previous = ledger.stages.get(stage.value)
        attempt = (previous.attempt if previous else 0) + 1
        started = StageRecord(stage=stage, status=StageStatus.RUNNING, attempt=attempt, execution=execution,
                              started_at=utc_now(), inputs=_inputs(ledger, stage))
        run = self.ledger.write(ledger.run, to_state=RunState(stage.value), status=RunStatus.RUNNING,
                                records=[started], execution=execution,
                                reason=f"{stage} started (attempt {attempt})")
        faults.reach(run_id, stage, "before_work", execution)
        result = self._work[stage](StageContext(ledger, snapshot, run, execution, task_token))
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
        return self._outcome(run, stage)

    def _report_commit(self, run: Run, record: StageRecord) -> None:
        if record.finished_at and record.started_at:
            self.metrics.seconds(metric_names.STAGE_DURATION, _seconds_between(record.started_at, record.finished_at),
                                 stage=record.stage.value)
        if run.status == RunStatus.COMPLETE and run.resumes > 0:
            self.metrics.count(metric_names.RUNS_RECOVERED)

    def _outcome(self, run: Run, stage: Stage, skipped: bool = False) -> dict[str, Any]:
        return {"run_id": run.run_id, "stage": stage.value, "skipped": skipped, "status": run.status.value,
                "artifacts": self.artifacts.location(run.run_id)}

    def _output(self, ledger: Ledger, stage: Stage, name: str) -> ArtifactRef:
        record = ledger.stages.get(stage.value)
        keys = set(record.outputs) if record else set()
        for ref in ledger.artifacts:
            if ref.key in keys and ref.name == name:
                return ref
        raise StaleContextError(f"{stage} has no committed {name}; it must run again")

    # -- what each stage does --------------------------------------------------------------
    def _inspect(self, ctx: StageContext) -> StageResult:
        inventory = self.agent.inspect(ctx.snapshot)
        ref = self.artifacts.put_json(ctx.run.run_id, Stage.INSPECT, "inventory.json", inventory.model_dump(mode="json"))
        evidence = Evidence(name=EVIDENCE_OF[Stage.INSPECT], stage=Stage.INSPECT,
                            fingerprint=digest({"revision": ctx.snapshot.revision, "files": ctx.snapshot.files}),
                            depends_on=source_dependencies(ctx.snapshot))
        return StageResult([ref], evidence, changes={"revision": ctx.snapshot.revision})

    def _plan(self, ctx: StageContext) -> StageResult:
        inventory = Inventory.model_validate(
            self.artifacts.get_json(self._output(ctx.ledger, Stage.INSPECT, "inventory.json")))
        plan = self.agent.plan(inventory, ctx.snapshot)
        ref = self.artifacts.put_json(ctx.run.run_id, Stage.PLAN, "plan.json", plan.model_dump(mode="json"))
        depends = {"evidence:source_tree": ctx.ledger.evidence["source_tree"].fingerprint, "revision": ctx.snapshot.revision}
        depends.update({f"file:{path}": sha for path, sha in plan.files_read.items()})
        evidence = Evidence(name=EVIDENCE_OF[Stage.PLAN], stage=Stage.PLAN, fingerprint=plan.digest(), depends_on=depends)
        return StageResult([ref], evidence, changes={"plan_digest": plan.digest()})

    def _execute(self, ctx: StageContext) -> StageResult:
        plan = Plan.model_validate(self.artifacts.get_json(self._output(ctx.ledger, Stage.PLAN, "plan.json")))
        workspace = self.settings.workspace_root / ctx.run.run_id / "execute"
        execution: Execution = self.agent.execute(plan, ctx.snapshot, workspace)
        run_id = ctx.run.run_id
        refs = [
            self.artifacts.put_json(run_id, Stage.EXECUTE, "test-files.json", execution.files),
            self.artifacts.put_text(run_id, Stage.EXECUTE, "changes.diff", execution.diff, "text/x-diff"),
        ]
        evidence = Evidence(name=EVIDENCE_OF[Stage.EXECUTE], stage=Stage.EXECUTE, fingerprint=digest(execution.files),
                            depends_on={"evidence:plan": ctx.ledger.evidence["plan"].fingerprint})
        return StageResult(refs, evidence)

    def _verify(self, ctx: StageContext) -> StageResult:
        files = self.artifacts.get_json(self._output(ctx.ledger, Stage.EXECUTE, "test-files.json"))
        # Verify may run on another container than execute did: rebuild the workspace from the
        # snapshot and the committed test files rather than trusting a local directory.
        workspace = apply_files(files, ctx.snapshot, self.settings.workspace_root / ctx.run.run_id / "verify")
        result = self.agent.verify(workspace, self.settings.test_timeout_s)
        run_id = ctx.run.run_id
        summary = result.model_dump(mode="json", exclude={"output"})
        refs = [
            self.artifacts.put_json(run_id, Stage.VERIFY, "command.json", summary),
            self.artifacts.put_text(run_id, Stage.VERIFY, "test-output.txt", result.output),
        ]
        evidence = Evidence(
            name=EVIDENCE_OF[Stage.VERIFY], stage=Stage.VERIFY,
            fingerprint=digest({**summary, "duration_s": None, "output": sha256_bytes(result.output.encode())}),
            depends_on={"evidence:test_changes": ctx.ledger.evidence["test_changes"].fingerprint,
                        "evidence:source_tree": ctx.ledger.evidence["source_tree"].fingerprint},
        )
        if result.passed:
            return StageResult(refs, evidence)
        why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
        return StageResult(refs, None, stage_status=StageStatus.FAILED,
                           failure=VerificationFailedError(f"test command {why}; see test-output.txt"))

    def _request_review(self, ctx: StageContext) -> StageResult:
        if not ctx.task_token:
            raise ValueError("await_review needs the state machine's task token")
        run_id = ctx.run.run_id
        plan_digest = ctx.ledger.evidence["plan"].fingerprint
        request = {
            "run_id": run_id, "plan_digest": plan_digest, "revision": ctx.snapshot.revision,
            "plan": self._output(ctx.ledger, Stage.PLAN, "plan.json").key,
            "diff": self._output(ctx.ledger, Stage.EXECUTE, "changes.diff").key,
            "test_output": self._output(ctx.ledger, Stage.VERIFY, "test-output.txt").key,
        }
        ref = self.artifacts.put_json(run_id, Stage.AWAIT_REVIEW, "review-request.json", request)
        review = Review(task_token=ctx.task_token, plan_digest=plan_digest, revision=ctx.snapshot.revision,
                        execution=ctx.execution)
        return StageResult([ref], None, stage_status=StageStatus.RUNNING, run_status=RunStatus.AWAITING_REVIEW,
                           records=[review])

    def _complete(self, ctx: StageContext) -> StageResult:
        ledger, run_id = ctx.ledger, ctx.run.run_id
        verification = self.artifacts.get_json(self._output(ledger, Stage.VERIFY, "command.json"))
        summary = {
            "run_id": run_id,
            "request": ctx.run.request,
            "repository": ctx.run.repository,
            "revision": ctx.snapshot.revision,
            "environment": ctx.run.environment,
            "plan_digest": ledger.evidence["plan"].fingerprint,
            "approved_by_review": ledger.review.model_dump(mode="json", exclude={"task_token"}) if ledger.review else None,
            "tests": verification,
            "artifacts": {ref.name: {"key": ref.key, "sha256": ref.sha256} for ref in ledger.artifacts
                          if ref.key in _committed_keys(ledger)},
        }
        refs = [
            self.artifacts.put_json(run_id, Stage.COMPLETE, "summary.json", summary),
            self.artifacts.put_text(run_id, Stage.COMPLETE, "summary.md", _summary_markdown(summary), "text/markdown"),
        ]
        evidence = Evidence(name=EVIDENCE_OF[Stage.COMPLETE], stage=Stage.COMPLETE, fingerprint=digest(summary),
                            depends_on={"evidence:approval": ledger.evidence["approval"].fingerprint})
        return StageResult(refs, evidence, run_status=RunStatus.COMPLETE)

    # -- the ReviewKeeper schedule ---------------------------------------------------------
    def keep_reviews_alive(self) -> dict[str, int]:
        if self.executions is None:
            raise RuntimeError("the review keeper needs STATE_MACHINE_ARN")
        counts = {"heartbeats": 0, "stale_failed": 0, "approvals_redelivered": 0}
        oldest = 0.0
        now = utc_now()
        cursor: str | None = None
        while True:
            runs, cursor = self.ledger.list_runs(RunStatus.AWAITING_REVIEW, 100, cursor)
            for run in runs:
                counts[self._keep_review_alive(run.run_id)] += 1
                oldest = max(oldest, _seconds_between(run.updated_at, now))
            if cursor is None:
                self.metrics.seconds(metric_names.OLDEST_PENDING_REVIEW, oldest)
                return counts

    def _keep_review_alive(self, run_id: str) -> str:
        ledger = self.ledger.load(run_id)
        review = ledger.review
        assert self.executions is not None and review is not None
        if review.decision is not None:
            # The API recorded the decision but did not get to answer the task (it crashed).
            self.executions.succeed_task(review.task_token, _review_output(ledger))
            return "approvals_redelivered"
        snapshot = self.sources.snapshot(ledger.run.repository)
        if not review_still_holds(ledger, snapshot):
            assessment = assess(ledger, snapshot, self.settings.max_replans)
            invalidate(self.ledger, ledger, assessment, review.execution, self.metrics)
            self.executions.fail_task(review.task_token, "StaleContextError", assessment.reason)
            return "stale_failed"
        self.executions.heartbeat(review.task_token)
        return "heartbeats"

    # -- the ClassifyFailure state ---------------------------------------------------------
    def classify(self, run_id: str, execution: str, error: dict[str, Any],
                 failed_stage: str | None = None) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        run = ledger.run
        name = str(error.get("Error") or "Unknown")
        cause = parse_cause(error.get("Cause"))
        if run.active_execution and run.active_execution != execution:
            return {"run_id": run_id, "action": "abandon", "reason": "a newer execution owns this run"}
        if run.status == RunStatus.COMPLETE:
            return {"run_id": run_id, "action": "done", "reason": "the run completed before the failure"}
        verdict = classify(name, cause.get("errorMessage", ""), run.replans, self.settings.max_replans)
        if verdict.action in ("replan", "abandon"):
            self.ledger.append(run_id, new_decision("recovery", verdict.reason,
                                                    {"error": name, "cause": cause, "action": verdict.action}, execution))
            return {"run_id": run_id, "action": verdict.action, "reason": verdict.reason}
        self.hand_off(ledger, execution, name, cause.get("errorMessage", name), kind=verdict.kind,
                      cause=cause, why=verdict.reason, failed_stage=failed_stage)
        return {"run_id": run_id, "action": "handoff", "reason": verdict.reason}

    def hand_off(self, ledger: Ledger, execution: str, error: str, message: str, *, kind: str,
                 cause: dict[str, Any] | None = None, why: str | None = None, failed_stage: str | None = None,
                 extra: list[Record] = ()) -> Run:  # type: ignore[assignment]
        """End the run in needs_person with what a person needs to pick it up."""
        run = ledger.run
        where = failed_stage or run.state.value  # the state machine says which stage failed
        stage = Stage(where) if where in Stage._value2member_map_ else None
        record = ledger.stages.get(stage.value) if stage else None
        committed = _committed_keys(ledger)
        written = self.artifacts.list_keys(f"runs/{run.run_id}/{stage.value}/") if stage else []
        details = {
            "kind": kind,
            "attempted": {"stage": stage.value if stage else None, "attempt": record.attempt if record else 0,
                          "execution": execution, "operation": f"{stage} stage" if stage else "restart assessment",
                          "started_at": record.started_at if record else None},
            "response": {"error": error, "message": message, "cause": cause or {}},
            "partial_effect": {
                "complete_stages": [s for s, r in ledger.stages.items() if r.status == StageStatus.COMPLETE],
                "uncommitted_artifacts": sorted(k for k in written if k not in committed),
                "external_effects": [
                    {"key": e.key, "kind": e.kind, "status": e.status.value, "receiver_id": e.receiver_id,
                     "attempts": e.attempts, "error": e.error} for e in ledger.effects.values()],
            },
            "recovery": ("fix the cause, then resume (POST /runs/{id}/resume or `agentledger resume`): "
                         "complete stages with valid evidence are kept, stale ones are redone").replace("{id}", run.run_id),
            "failed_at": _failure_time(ledger, record),
            "handoff_at": utc_now(),
        }
        handoff = new_decision("handoff", f"{stage or 'run'} needs a person: {why or message}", details, execution)
        records: list[Record] = [handoff, *extra]
        if record is not None and record.status == StageStatus.RUNNING:
            records.append(record.model_copy(update={"status": StageStatus.FAILED, "error": f"{error}: {message}",
                                                     "finished_at": utc_now()}))
        handed = self.ledger.write(run, to_state=RunState.NEEDS_PERSON, status=RunStatus.NEEDS_PERSON,
                                   records=records, execution=execution, reason=f"handed to a person: {error}")
        self.metrics.count(metric_names.RUNS_HANDED_OFF)
        self.metrics.seconds(metric_names.TIME_TO_HANDOFF, _seconds_between(details["failed_at"], details["handoff_at"]))
        return handed


def _seconds_between(start: str, end: str) -> float:
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())


def _failure_time(ledger: Ledger, record: StageRecord | None) -> str:
    """When the failing attempt began: the last time the ledger heard from the work that failed."""
    if record is not None and record.started_at:
        return record.started_at
    return ledger.run.updated_at


def _require_owner(run: Run, execution: str) -> None:
    if run.active_execution and run.active_execution != execution:
        raise SupersededExecutionError(
            f"execution {execution} no longer owns run {run.run_id}; {run.active_execution} does")


def _inputs(ledger: Ledger, stage: Stage) -> dict[str, str]:
    upstream = WORK_STAGES[: WORK_STAGES.index(stage)]
    return {EVIDENCE_OF[s]: ledger.evidence[EVIDENCE_OF[s]].fingerprint for s in upstream
            if EVIDENCE_OF[s] in ledger.evidence}


def _committed_keys(ledger: Ledger) -> set[str]:
    return {key for record in ledger.stages.values() for key in record.outputs}


def _review_output(ledger: Ledger) -> dict[str, Any]:
    review = ledger.review
    return {"decision": review.decision if review else "approve", "plan_digest": ledger.run.plan_digest}


def _summary_markdown(summary: dict[str, Any]) -> str:
    tests = summary["tests"]
    lines = [
        f"# agentledger run {summary['run_id']}",
        "",
        f"- request: {summary['request']}",
        f"- repository: {summary['repository']} at {summary['revision']}",
        f"- plan: {summary['plan_digest']}",
        f"- tests: `{' '.join(tests['command'])}` exited {tests['exit_code']} in {tests['duration_s']:.2f}s",
        "",
        "## Artifacts",
    ]
    lines += [f"- {name}: `{a['key']}` (sha256 {a['sha256'][:12]}…)" for name, a in sorted(summary["artifacts"].items())]
    return "\n".join(lines) + "\n"
