"""What the API does: create runs, show their ledger, take review decisions, resume."""
from __future__ import annotations

import contextlib
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentledger.records import new_decision
from agentledger.source import UPLOAD_KEY, SourceSnapshot, upload_key, upload_owner, uploaded_by

from . import metric_names
from .api_contract import (
    SOURCE_KINDS,
    BuildProgress,
    CancelOutcome,
    CreateRunRequest,
    ResumeOutcome,
    ReviewOutcome,
    ReviewRequest,
    RunPage,
    RunSummary,
    RunView,
    UploadGrant,
    UploadRequest,
    run_id_for,
)
from .buildkit.layout import PROGRESS_LIMIT_BYTES
from .errors import (
    ConcurrentModificationError,
    RepositoryNotAllowedError,
    RepositoryRejectedError,
    ReviewForbiddenError,
    ReviewRejectedError,
    RunAlreadyExistsError,
    RunConflictError,
    StaleContextError,
)
from .evidence import stage_evidence
from .fingerprints import digest
from .freshness import Entrance, EntryContext, invalidate, review_still_holds
from .git_source import is_git_source
from .models import Ledger, Run, RunState, RunStatus, Stage, StageStatus, utc_now
from .states import BuildStatus, DecisionKind, EvidenceState, Verdict
from .testrun.jacoco import CoverageCounts
from .workflow.reviews import review_output
from .workflow.writing import (
    FINDINGS_SHOWN,
    GenerationReport,
    coverage_line,
    finding_line,
    funnel_line,
    killed_lines,
    mutation_line,
    survivor_lines,
    writer_failure_line,
)

if TYPE_CHECKING:
    from .config import ApiSettings
    from .cursors import CursorSeal
    from .ports import ArtifactPort, ExecutionPort, LedgerPort, MetricSink, SourcePort

RESUMABLE = frozenset({RunStatus.NEEDS_PERSON, RunStatus.RUNNING})
UPLOAD_GRANT_SECONDS = 900
SUMMARY_PLAN_ITEMS = 5


# An assumed role's ARN names the role (without its path) and the session.
ASSUMED_ROLE = re.compile(r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/"
                          r"(?P<role>[\w+=,.@-]+)/[\w+=,.@-]+$")


def duty_holder(principal: str) -> str:
    """Who a principal is, for separation of duties: an assumed role's session name is the
    caller's own choice (`aws sts assume-role --role-session-name`), so a session is its role."""
    assumed = ASSUMED_ROLE.match(principal)
    if assumed is None:
        return principal
    return f"arn:{assumed['partition']}:iam::{assumed['account']}:role/{assumed['role']}"


def same_principal(first: str | None, second: str | None) -> bool:
    return first is not None and second is not None and duty_holder(first) == duty_holder(second)


def start_execution_name(run_id: str) -> str:
    return f"{run_id}-start"


def resume_execution_name(run_id: str, resume_number: int) -> str:
    return f"{run_id}-resume-{resume_number}"


class RunService:
    def __init__(self, settings: ApiSettings, ledger: LedgerPort, artifacts: ArtifactPort,
                 sources: SourcePort, executions: ExecutionPort, metrics: MetricSink, cursors: CursorSeal) -> None:
        self.settings = settings
        self.cursors = cursors
        self.ledger = ledger
        self.artifacts = artifacts
        self.sources = sources
        self.entrance = Entrance(sources, artifacts.read_manifest, settings.max_replans)
        self.executions = executions
        self.metrics = metrics

    # -- create ----------------------------------------------------------------------------
    def create(self, body: CreateRunRequest, idempotency_key: str | None, actor: str) -> dict[str, Any]:
        run_id = run_id_for(idempotency_key, actor)
        self._check_uploader(body.repository, actor)
        try:
            revision = self.sources.revision(body.repository)
        except RepositoryNotAllowedError as error:
            raise RepositoryRejectedError(str(error)) from error
        except Exception as error:  # noqa: BLE001 — any reason the source cannot be read is the caller's to fix
            raise RepositoryRejectedError(f"repository {body.repository!r} cannot be read: {error}") from error
        if body.revision and body.revision not in (revision, revision.removesuffix("+dirty")):
            raise RepositoryRejectedError(f"repository is at {revision}, not the requested {body.revision}")
        name = start_execution_name(run_id)
        run = Run(run_id=run_id, request=body.request, repository=body.repository, revision=revision,
                  environment=body.environment, requested_by=actor, active_execution=name, executions=[name])
        request = body.model_dump(mode="json")
        created = new_decision(DecisionKind.CREATED, "run requested",
                               {"request": request, "body_digest": digest(request)}, actor=actor)
        try:
            self.ledger.create_run(run, created)
            self.metrics.count(metric_names.RUNS_STARTED)
        except RunAlreadyExistsError:
            run = self.ledger.get_run(run_id)
            if (run.request, run.repository, run.environment) != (body.request, body.repository, body.environment):
                raise RunConflictError(f"Idempotency-Key already used for run {run_id} with a different body") from None
        self.executions.start(name, run_id)
        return self._summary(run)

    def grant_upload(self, body: UploadRequest, actor: str) -> dict[str, Any]:
        """A presigned POST for exactly this tarball, under the caller's own prefix: its key names
        its digest (checked again when a run reads it) and its size is the one declared. A key that
        exists gets no grant: an upload is never replaced, by anyone."""
        key = upload_key(body.sha256, upload_owner(duty_holder(actor)))
        repository = f"s3://{self.artifacts.bucket}/{key}"
        if self.artifacts.has_repository(repository):
            return UploadGrant(repository=repository, uploaded=True, expires_in_s=0, url=None,
                               fields=None).model_dump(mode="json")
        grant = self.artifacts.upload_grant(key, body.size, UPLOAD_GRANT_SECONDS, min_bytes=body.size)
        return UploadGrant(repository=repository, expires_in_s=UPLOAD_GRANT_SECONDS, **grant).model_dump(mode="json")

    def _check_uploader(self, repository: str, actor: str) -> None:
        """A run starts only on the caller's own upload: another principal's tarball is its code."""
        bucket, _, key = repository.removeprefix("s3://").partition("/")
        if not repository.startswith("s3://") or bucket != self.artifacts.bucket:
            return  # a local path, or another bucket's object: the resolver refuses it, naming its rule
        owner = uploaded_by(key)
        if owner is not None and owner != upload_owner(duty_holder(actor)):
            raise RepositoryRejectedError(f"{repository} was uploaded by another principal; upload the tree yourself "
                                          "(`agentledger run PATH` does it)")
        if owner is None and UPLOAD_KEY.match(key):
            raise RepositoryRejectedError(f"{repository} is an upload from before uploads were per principal; "
                                          "upload the tree again (`agentledger run PATH` does it)")

    def _summary(self, run: Run) -> dict[str, Any]:
        return RunSummary(run_id=run.run_id, status=run.status, state=run.state, execution=run.active_execution,
                          revision=run.revision).model_dump(mode="json")

    # -- read ------------------------------------------------------------------------------
    def list_runs(self, status: RunStatus | None, limit: int, cursor: str | None) -> dict[str, Any]:
        query = f"status={status.value if status else ''}"
        runs, next_cursor = self.ledger.list_runs(status, limit, self.cursors.open(cursor, query))
        return RunPage(runs=runs, next_cursor=self.cursors.seal(next_cursor, query)).model_dump(mode="json")

    def view(self, run_id: str) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        try:
            evidence_status = {name: s.model_dump() for name, s in self.entrance.enter(ledger).statuses.items()}
        except Exception as error:  # noqa: BLE001 — the ledger is still worth showing without the source
            evidence_status = {name: {"name": name, "status": EvidenceState.UNKNOWN.value,
                                      "reason": f"source unavailable: {error}"}
                               for name in ledger.evidence}
        document = ledger.model_dump(mode="json")  # RunView's review leaves the task token out
        document["evidence_status"] = evidence_status
        committed = ledger.committed_keys()
        document["artifacts"] = [
            {**ref.model_dump(mode="json"),
             "url": self.artifacts.presigned_url(ref, self.settings.artifact_link_seconds),
             "committed": ref.key in committed}
            for ref in ledger.artifacts
        ]
        document["handoff"] = _handoff_view(ledger)
        document["summary"] = self._summary_view(ledger)
        document["artifact_location"] = self.artifacts.location(run_id)
        document["progress"] = self._build_progress(ledger)
        return RunView.model_validate(document).model_dump(mode="json")

    def _build_progress(self, ledger: Ledger) -> BuildProgress | None:
        """The running execute stage's build's latest report of where it is, if it made one that
        reads as one (anything else is not shown: the build runs the repository's code)."""
        record = ledger.stages.get(Stage.EXECUTE.value)
        test_run = ledger.latest_test_run(Stage.EXECUTE)
        if (ledger.run.status != RunStatus.RUNNING or record is None or record.status != StageStatus.RUNNING
                or test_run is None or test_run.status != BuildStatus.IN_PROGRESS or test_run.build_id is None):
            return None
        data = self.artifacts.read(test_run.progress_key)
        if data is None or len(data) > PROGRESS_LIMIT_BYTES:
            return None
        try:
            return BuildProgress.model_validate_json(data)
        except ValidationError:
            return None

    def _summary_view(self, ledger: Ledger) -> dict[str, Any]:
        """What a person reads first: the request, the plan in a few lines, the files the run
        writes and what its tests showed."""
        plan = self._committed_json(ledger, Stage.PLAN, "plan.json")
        files = self._committed_json(ledger, Stage.EXECUTE, "test-files.json") or {}
        items = (plan or {}).get("items", [])
        latest = ledger.latest_test_run()
        report = (latest.report if latest else None) or {}
        counts = report.get("counts") or {}
        coverage = report.get("coverage")
        pull = ledger.confirmed("pull_request")
        generation = self._committed_json(ledger, Stage.EXECUTE, "generation.json")
        report_of_writer = None if generation is None else GenerationReport.model_validate(generation)
        return {
            "source": SOURCE_KINDS[source_kind(ledger.run.repository)],
            "request": ledger.run.request,
            "outcome": ledger.run.outcome,
            "pull_request": (pull.receiver_url or pull.receiver_id) if pull else None,
            "generation": None if report_of_writer is None else _generation_view(report_of_writer),
            "plan": None if plan is None else {
                "planner": plan.get("planner"), "targets": len(items), "skipped": len(plan.get("skipped", [])),
                "first": [{"target": item["target"], "test_path": item["test_path"], "rationale": item["rationale"]}
                          for item in items[:SUMMARY_PLAN_ITEMS]]},
            "files_changed": [{"path": path, "lines": text.count("\n")} for path, text in sorted(files.items())],
            # A writer's build writes what it kept, not what the plan targeted.
            "tests": {"written": len(items) if report_of_writer is None else len(report_of_writer.kept),
                      "outcome": report.get("outcome"),
                      **{name: counts.get(name) for name in ("passed", "failed", "errors", "skipped")},
                      "coverage": CoverageCounts.model_validate(coverage).line() if coverage else None},
        }

    def _committed_json(self, ledger: Ledger, stage: Stage, name: str) -> Any:
        record = ledger.stages.get(stage.value)
        outputs = set(record.outputs) if record else set()
        refs = [ref for ref in ledger.artifacts if ref.stage == stage and ref.name == name and ref.key in outputs]
        return self.artifacts.get_json(refs[-1]) if refs else None

    # -- review ----------------------------------------------------------------------------
    def review(self, run_id: str, body: ReviewRequest, actor: str) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        run, review = ledger.run, ledger.review
        if review is not None and review.decision is not None and run.status == RunStatus.AWAITING_REVIEW:
            raise ReviewRejectedError(f"run {run_id} was already decided ({review.decision} by {review.decided_by}); "
                                      "the execution is moving on")
        if run.status != RunStatus.AWAITING_REVIEW or review is None or review.decision is not None:
            raise ReviewRejectedError(f"run {run_id} is not waiting for review (status {run.status.value})"
                                      + _why_not_waiting(ledger))
        if (body.decision == Verdict.APPROVE and same_principal(actor, run.requested_by)
                and not self.settings.allow_self_approval):
            self._refuse_review(run, body, actor)
        if body.plan_digest != review.plan_digest:
            raise ReviewRejectedError(f"the review is for plan {review.plan_digest}, not {body.plan_digest}; "
                                      "fetch the run and review the current plan")
        entry = self.entrance.enter(ledger, self._current_snapshot)
        if not review_still_holds(entry):
            self._reject_stale_review(entry, review.task_token)
        decided = review.model_copy(update={"decision": body.decision, "decided_at": utc_now(),
                                            "decided_by": actor, "comment": body.comment})
        decision = new_decision(DecisionKind.REVIEW, f"reviewer chose {body.decision}", body.model_dump(mode="json"),
                                actor=actor)
        stage = ledger.stages[Stage.AWAIT_REVIEW.value]
        if body.decision == Verdict.APPROVE:
            fingerprint = digest({"decision": Verdict.APPROVE.value, "plan_digest": review.plan_digest,
                                  "revision": review.revision})
            approval = stage_evidence(Stage.AWAIT_REVIEW, fingerprint, ledger)
            records = [decided, decision, approval,
                       stage.model_copy(update={"status": StageStatus.COMPLETE, "finished_at": utc_now()})]
        else:
            records = [decided, decision,
                       stage.model_copy(update={"status": StageStatus.FAILED, "finished_at": utc_now(),
                                                "error": f"changes requested: {body.comment or ''}"}),
                       ledger.stages[Stage.PLAN.value].model_copy(update={"status": StageStatus.INVALIDATED})]
        try:
            # The status stays awaiting_review until the execution moves on, so the review keeper
            # can redeliver this decision if the task is not answered below.
            run = self.ledger.write(run, records=records, reason=f"review: {body.decision}")
        except ConcurrentModificationError as error:
            raise ReviewRejectedError(f"run {run_id} changed while the review was applied; "
                                      "fetch it and try again") from error
        waited = _seconds_since(review.requested_at, decided.decided_at)
        self.metrics.seconds(metric_names.REVIEW_WAIT, waited)
        if body.decision == Verdict.APPROVE:
            self.metrics.seconds(metric_names.STAGE_DURATION, waited, stage=Stage.AWAIT_REVIEW.value)
        delivered = self.executions.succeed_task(review.task_token, review_output(decided))
        # Not delivered: the waiting task is gone (its attempt failed or timed out). The decision
        # is recorded, and the review keeper hands it to the task that waits now.
        return ReviewOutcome(run_id=run_id, decision=body.decision, status=run.status,
                             delivered=delivered).model_dump(mode="json")

    def _refuse_review(self, run: Run, body: ReviewRequest, actor: str) -> None:
        why = (f"{actor} requested run {run.run_id} (as {duty_holder(actor)}) and may not approve it; another "
               "reviewer must, under another role (separation of duties; a one-person team deploys with "
               "allowSelfApproval=true)")
        refused = new_decision(DecisionKind.REVIEW_REFUSED, why, body.model_dump(mode="json"), actor=actor)
        # The refusal stands either way; only its record is lost to a concurrent change.
        with contextlib.suppress(ConcurrentModificationError):
            self.ledger.write(run, records=[refused], reason="review refused: the requester may not approve")
        raise ReviewForbiddenError(why)

    def _reject_stale_review(self, entry: EntryContext, task_token: str) -> None:
        """Record the rejection, invalidate the plan and wake the waiting execution so it
        replans now instead of waiting for the review to time out."""
        invalidate(self.ledger, entry, None, self.metrics)
        assessment = entry.assessment
        stale = [f"{e.name} is stale ({e.reason})" for e in assessment.evidence if e.status == EvidenceState.STALE]
        why = stale[0] if stale else assessment.reason
        self.executions.fail_task(task_token, StaleContextError.__name__, why)
        raise ReviewRejectedError(f"the plan is stale and was not approved: {why}")

    # -- resume ----------------------------------------------------------------------------
    def _current_snapshot(self, run: Run) -> SourceSnapshot:
        """The run's repository as it is now. Nothing can be judged fresh without it, so a
        repository that cannot be read any more (moved, deleted, expired) is a conflict to fix."""
        try:
            return self.sources.snapshot(run.repository)
        except Exception as error:  # noqa: BLE001 — whatever stops the source being read, the caller must restore it
            raise RunConflictError(f"run {run.run_id}'s repository {run.repository} cannot be read ({error}); "
                                   "restore it, then try again") from error

    def resume(self, run_id: str, actor: str) -> dict[str, Any]:
        ledger = self.ledger.load(run_id)
        run = ledger.run
        if run.status == RunStatus.CANCELLED:
            raise RunConflictError(f"run {run_id} was cancelled, and a cancelled run is not resumed: "
                                   "start a new run instead")
        if run.status not in RESUMABLE:
            raise RunConflictError(f"run {run_id} is {run.status.value}; only a stopped run can be resumed")
        if run.status == RunStatus.RUNNING and run.active_execution:
            running = self.executions.status(run.active_execution)
            if running == "RUNNING" or running is None:
                # A repeated or concurrent resume: answer with the execution already chosen.
                earlier = self._recorded_resume(ledger, run.active_execution)
                if earlier is None:
                    raise RunConflictError(f"run {run_id} is already running in execution {run.active_execution}")
                self.executions.start(run.active_execution, run_id)
                return earlier
        number = run.resumes + 1
        name = resume_execution_name(run_id, number)
        assessment = self.entrance.enter(ledger, self._current_snapshot).assessment
        response = ResumeOutcome(run_id=run_id, execution=name, assessment=assessment).model_dump(mode="json")
        decision = new_decision(DecisionKind.RESUME, assessment.reason, response, actor=actor)
        try:
            changes = {"active_execution": name, "executions": [*run.executions, name], "resumes": number}
            self.ledger.write(run, status=RunStatus.RUNNING, records=[decision], reason=f"resumed as {name}",
                              changes=changes)
        except ConcurrentModificationError:
            earlier = self._recorded_resume(self.ledger.load(run_id), name)
            if earlier is None:
                raise RunConflictError(f"run {run_id} changed while resuming; try again") from None
            response = earlier
        else:
            self.metrics.count(metric_names.RUNS_RESUMED)
        self.executions.start(name, run_id)
        return response

    # -- cancel ----------------------------------------------------------------------------
    def cancel(self, run_id: str, reason: str | None, actor: str) -> dict[str, Any]:
        """Stop a run for good: the decision first, so a stage that is still running finds the run
        cancelled and stops instead of moving it on; then its execution. A run writing its effects
        (the complete stage) is past cancelling: it finishes, or waits for a person."""
        ledger = self.ledger.load(run_id)
        run = ledger.run
        if run.status == RunStatus.CANCELLED:
            earlier = next((d for d in reversed(ledger.decisions) if d.kind == DecisionKind.CANCELLED), None)
            if earlier is not None:
                return earlier.details  # a repeated cancel: the answer the first one got
        if run.status == RunStatus.COMPLETE or run.state == RunState.COMPLETE:
            raise RunConflictError(f"run {run_id} is {run.status.value} and past cancelling: "
                                   "its pull request, ticket and notifications are written or being written")
        running = run.active_execution if run.active_execution and run.status != RunStatus.NEEDS_PERSON else None
        why = reason or f"cancelled by {actor}"
        outcome = CancelOutcome(run_id=run_id, status=RunStatus.CANCELLED, stopped_execution=running,
                                reason=why).model_dump(mode="json")
        decision = new_decision(DecisionKind.CANCELLED, why, outcome, execution=running, actor=actor)
        # The stage under way ends here too, failed by the cancel, so no view shows it running on.
        interrupted = [record.model_copy(update={"status": StageStatus.FAILED, "finished_at": utc_now(),
                                                 "error": f"cancelled: {why}"[:500]})
                       for record in ledger.stages.values() if record.status == StageStatus.RUNNING]
        try:
            self.ledger.write(run, to_state=RunState.CANCELLED, status=RunStatus.CANCELLED,
                              records=[decision, *interrupted], reason=f"cancelled: {why}"[:500])
        except ConcurrentModificationError:
            raise RunConflictError(f"run {run_id} changed while cancelling; try again") from None
        if running is not None:
            self.executions.stop(running, f"run {run_id} cancelled: {why}")
        self.metrics.count(metric_names.RUNS_CANCELLED)
        return outcome

    @staticmethod
    def _recorded_resume(ledger: Ledger, execution: str) -> dict[str, Any] | None:
        for decision in reversed(ledger.decisions):
            if decision.kind == DecisionKind.RESUME and decision.details.get("execution") == execution:
                return decision.details
        return None


def source_kind(repository: str) -> str:
    if repository.startswith("s3://"):
        return "snapshot"
    return "git" if is_git_source(repository) else "directory"


def _seconds_since(start: str, end: str | None) -> float:
    return max(0.0, (datetime.fromisoformat(end or utc_now()) - datetime.fromisoformat(start)).total_seconds())


def _handoff_view(ledger: Ledger) -> dict[str, Any] | None:
    """The latest handoff of a run that waits for a person (RunView checks its details against Handoff)."""
    if ledger.run.status != RunStatus.NEEDS_PERSON:
        return None
    decision = next((d for d in reversed(ledger.decisions) if d.kind == DecisionKind.HANDOFF), None)
    return None if decision is None else decision.model_dump(mode="json")


def _generation_view(report: GenerationReport) -> dict[str, Any]:
    return {
        "writer": report.writer, "generated": report.funnel.get("generated", 0), "kept": len(report.kept),
        "funnel": funnel_line(report),
        "mutation": [mutation_line(path, module) for path, module in sorted(report.mutation.items())],
        "mutants_killed": report.mutants_killed(),
        "mutation_score_gained": report.mutation_score_gained(),
        "killed": killed_lines(report)[:FINDINGS_SHOWN],
        "survivors": survivor_lines(report)[:FINDINGS_SHOWN],
        "survivors_total": sum(module.survivors_total for module in report.mutation.values()),
        "coverage": [coverage_line(path, change) for path, change in sorted(report.coverage.items())],
        "coverage_gained": report.coverage_gained(),
        "findings": [finding_line(finding) for finding in report.ranked_findings()[:FINDINGS_SHOWN]],
        "findings_total": len(report.findings),
        "writer_failures": [writer_failure_line(report, failure)
                            for failure in report.writer_failures[:FINDINGS_SHOWN]],
    }


def _why_not_waiting(ledger: Ledger) -> str:
    """What moved the run off its review, when its plan went stale there: the ledger's decision names
    the files that changed, and the person whose approval was refused reads them here."""
    for decision in reversed(ledger.decisions):
        if decision.kind in (DecisionKind.STALE_PLAN_REJECTED, DecisionKind.STALE_CONTEXT):
            return f": {decision.summary}"
        if decision.kind in (DecisionKind.REVIEW, DecisionKind.HANDOFF, DecisionKind.RESUME):
            break  # what moved it on since is no staleness
    return ""
