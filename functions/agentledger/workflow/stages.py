"""What each stage does. Each body reads its committed inputs from the ledger's artifacts, asks
the agent for the work, stores the outputs and returns the evidence the graph says it records."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentledger.records import new_decision

from .. import metric_names
from ..agent import Agent, Inventory, ModelCall, Plan, PlanBrief, PlannerOutputError
from ..agent.executor import diff_against_source
from ..agent.planner import repository_config
from ..errors import StaleContextError
from ..evidence import EVIDENCE_OF, file_reads, stage_evidence
from ..fingerprints import digest
from ..models import (
    ArtifactRef,
    ChangeRequest,
    Evidence,
    Ledger,
    Record,
    Review,
    Run,
    RunOutcome,
    RunStatus,
    Stage,
    StageStatus,
    TestRun,
)
from ..states import DecisionKind, Verdict
from ..testrun.config import EXPLICIT_FILE, PYPROJECT_FILE
from ..workspaces import execute_workspace, expire_workspaces
from .builds import BuildAllowance, load_build_config
from .verification import TestBuilds, TestReport
from .writing import TestWriting, language_of, refuse_hidden_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentledger.source import SourceSnapshot

    from ..config import WorkflowSettings
    from ..ports import ArtifactPort, BuildPort, LedgerPort, MetricSink


@dataclass
class StageResult:
    artifacts: list[ArtifactRef]
    evidence: Evidence | None
    stage_status: StageStatus = StageStatus.COMPLETE
    run_status: RunStatus = RunStatus.RUNNING
    changes: dict[str, Any] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    failure: Exception | None = None
    run: Run | None = None  # the run as the body left it, when the body wrote to the ledger itself
    # The work goes on elsewhere (a test build): its end wakes the stage, or it looks after this.
    poll_after_s: int | None = None
    waiting_on: TestRun | None = None  # that build, what the state machine's wait parks on


def pending(run: Run, poll_after_s: int, waiting_on: TestRun) -> StageResult:
    return StageResult([], None, stage_status=StageStatus.RUNNING, run=run, poll_after_s=poll_after_s,
                       waiting_on=waiting_on)


@dataclass
class StageContext:
    ledger: Ledger
    snapshot: SourceSnapshot
    run: Run
    execution: str
    task_token: str | None


def committed_output(ledger: Ledger, stage: Stage, name: str) -> ArtifactRef:
    record = ledger.stages.get(stage.value)
    keys = set(record.outputs) if record else set()
    for ref in ledger.artifacts:
        if ref.key in keys and ref.name == name:
            return ref
    raise StaleContextError(f"{stage} has no committed {name}; it must run again")


class StageWork:
    def __init__(self, settings: WorkflowSettings, ledger: LedgerPort, artifacts: ArtifactPort, agent: Agent,
                 builds: BuildPort | None, metrics: MetricSink) -> None:
        self.settings = settings
        self.artifacts = artifacts
        self.metrics = metrics
        self.agent = agent
        self.allowance = BuildAllowance(settings.test_timeout_limit_s, settings.build_computes, settings.build_images)
        self.test_builds = TestBuilds(ledger, artifacts, builds, self.allowance)
        self.writing = TestWriting(ledger, artifacts, builds, metrics, settings.generation_limits)
        self.body: dict[Stage, Callable[[StageContext], StageResult]] = {
            Stage.INSPECT: self.inspect,
            Stage.PLAN: self.plan,
            Stage.EXECUTE: self.execute,
            Stage.VERIFY: self.verify,
            Stage.AWAIT_REVIEW: self.request_review,
            Stage.COMPLETE: self.complete,
        }

    def inspect(self, ctx: StageContext) -> StageResult:
        inventory = self.agent.inspect(ctx.snapshot)
        ref = self.artifacts.put_json(ctx.run.run_id, Stage.INSPECT, "inventory.json",
                                      inventory.model_dump(mode="json"))
        manifest = self.artifacts.put_json(ctx.run.run_id, Stage.INSPECT, "source-manifest.json", ctx.snapshot.files)
        read_from = digest({"revision": ctx.snapshot.revision, "tree": ctx.snapshot.tree_digest})
        evidence = stage_evidence(Stage.INSPECT, read_from, ctx.ledger,
                                  file_reads(ctx.snapshot.files, ctx.snapshot, manifest))
        return StageResult([ref, manifest], evidence, changes={"revision": ctx.snapshot.revision})

    def plan(self, ctx: StageContext) -> StageResult:
        inventory = Inventory.model_validate(
            self.artifacts.get_json(committed_output(ctx.ledger, Stage.INSPECT, "inventory.json")))
        sent_back = _change_request(ctx.ledger)
        brief = PlanBrief(request=ctx.run.request, reviewer_comment=sent_back.comment if sent_back else None,
                          rejected_plan_digest=sent_back.plan_digest if sent_back else None, run_id=ctx.run.run_id)
        try:
            plan = self.agent.plan(inventory, ctx.snapshot, brief)
        except PlannerOutputError as unusable:
            # The calls that led here are what a person needs to see: kept, then handed over.
            calls = self._record_model_calls(ctx.run.run_id, unusable.calls)
            return StageResult([ref for ref, _ in calls], None, stage_status=StageStatus.FAILED, failure=unusable)
        changed_meanwhile = sorted(path for path, sha in plan.files_read.items() if ctx.snapshot.files.get(path) != sha)
        if changed_meanwhile:
            # What the plan read must be the tree its evidence names, or the cheap freshness
            # check (the tree's digest is unchanged) would vouch for bytes nobody hashed.
            raise StaleContextError(f"files changed while the plan was made: {', '.join(changed_meanwhile[:10])}")
        if plan.generation is not None:
            plan = plan.model_copy(update={"generation": self.settings.generation_limits.bound(plan.generation)})
        outcome = RunOutcome.CHANGES_PROPOSED
        if not plan.items:
            asked_by = _empty_plans_reviewed_by(ctx.snapshot)
            # The file that asks is what the plan read: an edit to it makes the plan stale.
            plan = plan.model_copy(update={"files_read": {**plan.files_read, **asked_by}})
            reviewed = self.settings.review_empty_plans or bool(asked_by)
            outcome = RunOutcome.EMPTY_PLAN_REVIEWED if reviewed else RunOutcome.NOTHING_TO_DO
        calls = self._record_model_calls(ctx.run.run_id, plan.model_calls)
        ref = self.artifacts.put_json(ctx.run.run_id, Stage.PLAN, "plan.json", plan.approved_content())
        read = self.artifacts.put_json(ctx.run.run_id, Stage.PLAN, "files-read.json", plan.files_read)
        reads = {**file_reads(plan.files_read, ctx.snapshot, read),
                 **{f"model_call:{call_ref.name}": call_ref.sha256 for call_ref, _ in calls}}
        evidence = stage_evidence(Stage.PLAN, plan.digest(), ctx.ledger, reads)
        records: list[Record] = []
        if sent_back is not None and sent_back.plan_digest == plan.digest():
            records.append(new_decision(
                DecisionKind.REPLAN_UNCHANGED,
                f"the planner ({plan.planner}) made the same plan again after {sent_back.decided_by or 'the reviewer'} "
                f"asked for changes; the reviewer is asked again",
                {"plan_digest": plan.digest(), "comment": sent_back.comment}, ctx.execution))
        return StageResult([*(call_ref for call_ref, _ in calls), ref, read], evidence,
                           changes={"plan_digest": plan.digest(), "outcome": outcome}, records=records)

    def _record_model_calls(self, run_id: str, calls: list[ModelCall]) -> list[tuple[ArtifactRef, ModelCall]]:
        recorded = []
        for number, call in enumerate(calls, start=1):
            ref = self.artifacts.put_json(run_id, Stage.PLAN, f"model-call-{number}.json", call.model_dump(mode="json"))
            recorded.append((ref, call))
            self.metrics.count(metric_names.MODEL_CALLS)
            self.metrics.count(metric_names.MODEL_INPUT_TOKENS, call.input_tokens)
            self.metrics.count(metric_names.MODEL_OUTPUT_TOKENS, call.output_tokens)
            self.metrics.seconds(metric_names.MODEL_LATENCY, call.latency_ms / 1000)
            self.metrics.count(metric_names.MODEL_COST, call.estimated_cost_usd)
        return recorded

    def execute(self, ctx: StageContext) -> StageResult:
        """The writer's candidates go to a build of their own (writing tests runs the repository's
        code), which keeps those that build, pass five times alone and with the suite, and add
        coverage; this stage starts it, is called again until it ends, and records what it kept."""
        plan = Plan.model_validate(self.artifacts.get_json(committed_output(ctx.ledger, Stage.PLAN, "plan.json")))
        config = load_build_config(ctx.snapshot.root, self.allowance)
        if config.ecosystem != "python" and language_of(plan) != "java":
            # The filters run pytest and coverage.py, or Maven for JUnit classes: another
            # ecosystem's candidates are kept as written, or not at all.
            files = self._candidates(plan, ctx)
            refuse_hidden_text(files)
            return self._written(ctx, files, [])
        previous = ctx.ledger.stages.get(Stage.EXECUTE.value)
        failure_reported = (previous is not None and previous.status == StageStatus.FAILED
                            and previous.execution != ctx.execution)
        progress = self.writing.advance(ctx.run, ctx.execution, plan, config, ctx.snapshot.root, ctx.snapshot.files,
                                        lambda: self._candidates(plan, ctx), ctx.ledger.test_runs,
                                        rerun_reported=failure_reported)
        assert progress.test_run is not None
        if not progress.finished:
            return pending(progress.run, progress.poll_after_s, progress.test_run)
        assert progress.artifacts is not None
        if progress.failure is not None or progress.files is None:
            return StageResult(progress.artifacts, None, stage_status=StageStatus.FAILED, records=[progress.test_run],
                               run=progress.run, failure=progress.failure)
        result = self._written(ctx, progress.files, progress.artifacts)
        result.records.append(progress.test_run)
        result.run = progress.run
        if not progress.files:
            result.changes["outcome"] = RunOutcome.NO_TESTS_KEPT
        elif ctx.run.outcome == RunOutcome.NO_TESTS_KEPT:
            result.changes["outcome"] = RunOutcome.CHANGES_PROPOSED
        return result

    def _candidates(self, plan: Plan, ctx: StageContext) -> dict[str, str]:
        """The agent's candidate test files (Pynguin's come from the build itself)."""
        expire_workspaces(self.settings.workspace_root, self.settings.workspace_retention_s)
        workspace = execute_workspace(self.settings.workspace_root, ctx.run.run_id)
        files = self.agent.execute(plan, ctx.snapshot, workspace).files
        # What the workspace holds is in the build's input now; an attempt that failed leaves its
        # workspace for the person it is handed to, until it expires.
        shutil.rmtree(workspace.parent, ignore_errors=True)
        return files

    def _written(self, ctx: StageContext, files: dict[str, str], artifacts: list[ArtifactRef]) -> StageResult:
        run_id = ctx.run.run_id
        refs = [
            *artifacts,
            self.artifacts.put_json(run_id, Stage.EXECUTE, "test-files.json", files),
            self.artifacts.put_text(run_id, Stage.EXECUTE, "changes.diff", diff_against_source(files, ctx.snapshot),
                                    "text/x-diff"),
        ]
        reads = {f"artifact:{ref.name}": ref.sha256 for ref in artifacts if ref.name == "generation.json"}
        evidence = stage_evidence(Stage.EXECUTE, digest(files), ctx.ledger, reads)
        return StageResult(refs, evidence)

    def verify(self, ctx: StageContext) -> StageResult:
        """The tests run in a build of their own, outside this function's trust boundary; this
        stage starts it, is called again until it ends (the state machine waits in between), and
        then records what it showed."""
        files = committed_output(ctx.ledger, Stage.EXECUTE, "test-files.json")
        previous = ctx.ledger.stages.get(Stage.VERIFY.value)
        failure_reported = (previous is not None and previous.status == StageStatus.FAILED
                            and previous.execution != ctx.execution)
        progress = self.test_builds.advance(ctx.run, ctx.execution, ctx.snapshot.root, ctx.snapshot.files, files,
                                            ctx.ledger.test_runs, rerun_reported=failure_reported)
        if not progress.finished:
            return pending(progress.run, progress.poll_after_s, progress.test_run)
        refs = list(progress.artifacts or [])
        records: list[Record] = [progress.test_run]
        report = progress.report
        if progress.failure is None and report is not None:
            fingerprint = digest({**report.model_dump(mode="json"), "duration_s": None, "build_id": None})
            evidence = stage_evidence(Stage.VERIFY, fingerprint, ctx.ledger,
                                      {"test_run": progress.test_run.digest})
            return StageResult(refs, evidence, records=records, run=progress.run)
        return StageResult(refs, None, stage_status=StageStatus.FAILED, records=records, run=progress.run,
                           failure=progress.failure)

    def request_review(self, ctx: StageContext) -> StageResult:
        if not ctx.task_token:
            raise ValueError("await_review needs the state machine's task token")
        run_id = ctx.run.run_id
        plan_digest = ctx.ledger.evidence[EVIDENCE_OF[Stage.PLAN]].fingerprint
        request: dict[str, Any] = {
            "run_id": run_id, "plan_digest": plan_digest, "revision": ctx.snapshot.revision,
            "plan": committed_output(ctx.ledger, Stage.PLAN, "plan.json").key,
            "diff": committed_output(ctx.ledger, Stage.EXECUTE, "changes.diff").key,
            "test_output": committed_output(ctx.ledger, Stage.VERIFY, "test-output.txt").key,
        }
        ref = self.artifacts.put_json(run_id, Stage.AWAIT_REVIEW, "review-request.json", request)
        sent_back = _change_request(ctx.ledger)
        unchanged_after = sent_back if sent_back is not None and sent_back.plan_digest == plan_digest else None
        if unchanged_after is not None:
            request["unchanged_after"] = unchanged_after.model_dump(mode="json")
        review = Review(task_token=ctx.task_token, plan_digest=plan_digest, revision=ctx.snapshot.revision,
                        execution=ctx.execution, unchanged_after=unchanged_after)
        return StageResult([ref], None, stage_status=StageStatus.RUNNING, run_status=RunStatus.AWAITING_REVIEW,
                           records=[review])

    def complete(self, ctx: StageContext) -> StageResult:
        ledger, run_id = ctx.ledger, ctx.run.run_id
        nothing_to_do = ctx.run.outcome == RunOutcome.NOTHING_TO_DO
        verification = None if nothing_to_do else _committed_test_report(ledger)
        approved = None if nothing_to_do or ledger.review is None else ledger.review.model_dump(
            mode="json", exclude={"task_token"})
        committed = ledger.committed_keys()
        summary = {
            "run_id": run_id,
            "request": ctx.run.request,
            "repository": ctx.run.repository,
            "revision": ctx.snapshot.revision,
            "environment": ctx.run.environment,
            "outcome": ctx.run.outcome,
            "plan_digest": ledger.evidence[EVIDENCE_OF[Stage.PLAN]].fingerprint,
            "approved_by_review": approved,
            "tests": verification,
            "artifacts": {ref.name: {"key": ref.key, "sha256": ref.sha256} for ref in ledger.artifacts
                          if ref.key in committed},
        }
        refs = [
            self.artifacts.put_json(run_id, Stage.COMPLETE, "summary.json", summary),
            self.artifacts.put_text(run_id, Stage.COMPLETE, "summary.md", _summary_markdown(summary), "text/markdown"),
        ]
        return StageResult(refs, stage_evidence(Stage.COMPLETE, digest(summary), ledger), run_status=RunStatus.COMPLETE)


def _summary_markdown(summary: dict[str, Any]) -> str:
    tests = summary["tests"]
    lines = [
        f"# agentledger run {summary['run_id']}",
        "",
        f"- request: {summary['request']}",
        f"- repository: {summary['repository']} at {summary['revision']}",
        f"- outcome: {summary['outcome']}",
        f"- plan: {summary['plan_digest']}",
        f"- tests: `{tests['command']}`: {tests['reason']}" if tests else "- tests: none written, none run",
        "",
        "## Artifacts",
    ]
    lines += [f"- {name}: `{a['key']}` (sha256 {a['sha256'][:12]}…)"
              for name, a in sorted(summary["artifacts"].items())]
    return "\n".join(lines) + "\n"


def _committed_test_report(ledger: Ledger) -> dict[str, Any]:
    """verify's command.json, as the record of the build its evidence names holds it: committed with
    the artifact, so the summary need not read the artifact."""
    test_run = ledger.test_runs[ledger.evidence[EVIDENCE_OF[Stage.VERIFY]].depends_on["test_run"]]
    return TestReport.model_validate(test_run.report).model_dump(mode="json")


def _change_request(ledger: Ledger) -> ChangeRequest | None:
    """The reviewer's request for changes, if the last review sent the plan back."""
    review = ledger.review
    if review is None or review.decision != Verdict.REQUEST_CHANGES:
        return None
    return ChangeRequest(plan_digest=review.plan_digest, comment=review.comment, decided_by=review.decided_by,
                         decided_at=review.decided_at)


def _empty_plans_reviewed_by(snapshot: SourceSnapshot) -> dict[str, str]:
    """The repository's configuration file, by its content's digest, when it asks for a plan that
    writes nothing to be reviewed; empty when it does not (or has no usable configuration)."""
    config = repository_config(snapshot)
    if config is None or not config.review_empty_plans:
        return {}
    path = EXPLICIT_FILE if config.source == EXPLICIT_FILE else PYPROJECT_FILE
    return {path: snapshot.files[path]} if path in snapshot.files else {}
