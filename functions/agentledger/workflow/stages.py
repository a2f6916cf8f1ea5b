"""What each stage does. Each body reads its committed inputs from the ledger's artifacts, asks
the agent for the work, stores the outputs and returns the evidence the graph says it records."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agent import Agent, Execution, Inventory, Plan, apply_files
from ..agent.source import SourceSnapshot
from ..config import Settings
from ..errors import StaleContextError, VerificationFailedError
from ..evidence import (
    EVIDENCE_OF,
    file_dependencies,
    source_dependencies,
    stage_evidence,
)
from ..fingerprints import digest, sha256_bytes
from ..models import (
    ArtifactRef,
    Evidence,
    Ledger,
    Record,
    Review,
    Run,
    RunStatus,
    Stage,
    StageStatus,
)
from ..ports import ArtifactPort


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


def committed_keys(ledger: Ledger) -> set[str]:
    return {key for record in ledger.stages.values() for key in record.outputs}


def committed_output(ledger: Ledger, stage: Stage, name: str) -> ArtifactRef:
    record = ledger.stages.get(stage.value)
    keys = set(record.outputs) if record else set()
    for ref in ledger.artifacts:
        if ref.key in keys and ref.name == name:
            return ref
    raise StaleContextError(f"{stage} has no committed {name}; it must run again")


class StageWork:
    def __init__(self, settings: Settings, artifacts: ArtifactPort, agent: Agent) -> None:
        self.settings = settings
        self.artifacts = artifacts
        self.agent = agent
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
        ref = self.artifacts.put_json(ctx.run.run_id, Stage.INSPECT, "inventory.json", inventory.model_dump(mode="json"))
        evidence = stage_evidence(Stage.INSPECT, digest({"revision": ctx.snapshot.revision, "files": ctx.snapshot.files}),
                                  ctx.ledger, source_dependencies(ctx.snapshot))
        return StageResult([ref], evidence, changes={"revision": ctx.snapshot.revision})

    def plan(self, ctx: StageContext) -> StageResult:
        inventory = Inventory.model_validate(
            self.artifacts.get_json(committed_output(ctx.ledger, Stage.INSPECT, "inventory.json")))
        plan = self.agent.plan(inventory, ctx.snapshot)
        ref = self.artifacts.put_json(ctx.run.run_id, Stage.PLAN, "plan.json", plan.model_dump(mode="json"))
        reads = {"revision": ctx.snapshot.revision, **file_dependencies(plan.files_read)}
        evidence = stage_evidence(Stage.PLAN, plan.digest(), ctx.ledger, reads)
        return StageResult([ref], evidence, changes={"plan_digest": plan.digest()})

    def execute(self, ctx: StageContext) -> StageResult:
        plan = Plan.model_validate(self.artifacts.get_json(committed_output(ctx.ledger, Stage.PLAN, "plan.json")))
        workspace = self.settings.workspace_root / ctx.run.run_id / "execute"
        execution: Execution = self.agent.execute(plan, ctx.snapshot, workspace)
        run_id = ctx.run.run_id
        refs = [
            self.artifacts.put_json(run_id, Stage.EXECUTE, "test-files.json", execution.files),
            self.artifacts.put_text(run_id, Stage.EXECUTE, "changes.diff", execution.diff, "text/x-diff"),
        ]
        return StageResult(refs, stage_evidence(Stage.EXECUTE, digest(execution.files), ctx.ledger))

    def verify(self, ctx: StageContext) -> StageResult:
        files = self.artifacts.get_json(committed_output(ctx.ledger, Stage.EXECUTE, "test-files.json"))
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
        if result.passed:
            fingerprint = digest({**summary, "duration_s": None, "output": sha256_bytes(result.output.encode())})
            return StageResult(refs, stage_evidence(Stage.VERIFY, fingerprint, ctx.ledger))
        why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
        return StageResult(refs, None, stage_status=StageStatus.FAILED,
                           failure=VerificationFailedError(f"test command {why}; see test-output.txt"))

    def request_review(self, ctx: StageContext) -> StageResult:
        if not ctx.task_token:
            raise ValueError("await_review needs the state machine's task token")
        run_id = ctx.run.run_id
        plan_digest = ctx.ledger.evidence[EVIDENCE_OF[Stage.PLAN]].fingerprint
        request = {
            "run_id": run_id, "plan_digest": plan_digest, "revision": ctx.snapshot.revision,
            "plan": committed_output(ctx.ledger, Stage.PLAN, "plan.json").key,
            "diff": committed_output(ctx.ledger, Stage.EXECUTE, "changes.diff").key,
            "test_output": committed_output(ctx.ledger, Stage.VERIFY, "test-output.txt").key,
        }
        ref = self.artifacts.put_json(run_id, Stage.AWAIT_REVIEW, "review-request.json", request)
        review = Review(task_token=ctx.task_token, plan_digest=plan_digest, revision=ctx.snapshot.revision,
                        execution=ctx.execution)
        return StageResult([ref], None, stage_status=StageStatus.RUNNING, run_status=RunStatus.AWAITING_REVIEW,
                           records=[review])

    def complete(self, ctx: StageContext) -> StageResult:
        ledger, run_id = ctx.ledger, ctx.run.run_id
        verification = self.artifacts.get_json(committed_output(ledger, Stage.VERIFY, "command.json"))
        committed = committed_keys(ledger)
        summary = {
            "run_id": run_id,
            "request": ctx.run.request,
            "repository": ctx.run.repository,
            "revision": ctx.snapshot.revision,
            "environment": ctx.run.environment,
            "plan_digest": ledger.evidence[EVIDENCE_OF[Stage.PLAN]].fingerprint,
            "approved_by_review": ledger.review.model_dump(mode="json", exclude={"task_token"}) if ledger.review else None,
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
        f"- plan: {summary['plan_digest']}",
        f"- tests: `{' '.join(tests['command'])}` exited {tests['exit_code']} in {tests['duration_s']:.2f}s",
        "",
        "## Artifacts",
    ]
    lines += [f"- {name}: `{a['key']}` (sha256 {a['sha256'][:12]}…)" for name, a in sorted(summary["artifacts"].items())]
    return "\n".join(lines) + "\n"
