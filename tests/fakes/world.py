"""One run's world on the in-memory adapters: the sample repository in a scratch directory, the
Workflow, RunService and EffectRunner wired to the same ledger, artifacts and executions."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentledger.agent import Agent
from agentledger.config import Settings
from agentledger.cursors import CursorSeal
from agentledger.effects import EffectRunner
from agentledger.models import Stage
from agentledger.ports import Receiver
from agentledger.service import CreateRunRequest, ReviewRequest, RunService
from agentledger.workflow import Workflow
from tests.fakes.adapters import (
    DirectorySources,
    InMemoryArtifacts,
    InMemoryLedger,
    RecordingExecutions,
    RecordingMetrics,
)
from tests.fakes.agent import InstantAgent
from tests.fakes.builds import InstantBuilds
from tests.fakes.effects import InMemoryIdempotency, InMemoryTracker
from tests.samples import write_sample_repository

TOKEN = "task-token-1"
CURSOR_KEY = b"memory-cursor-signing-key"
# Callers as API Gateway's IAM authorization names them.
REQUESTER = "arn:aws:iam::123456789012:user/requester"
REVIEWER = "arn:aws:iam::123456789012:user/reviewer"
OPERATOR = "arn:aws:sts::123456789012:assumed-role/operator/on-call"
UP_TO_REVIEW = (Stage.INSPECT, Stage.PLAN, Stage.EXECUTE, Stage.VERIFY)


def memory_settings(workspace_root: Path, max_replans: int = 3, review_empty_plans: bool = False) -> Settings:
    return Settings(ledger_table="ledger", artifact_bucket="memory-bucket", idempotency_table="idempotency",
                    environment="dev", state_machine_arn="arn:memory:stateMachine:run",
                    workspace_root=workspace_root, max_replans=max_replans, agent_spec=None,
                    review_empty_plans=review_empty_plans)


@dataclass
class World:
    repo: Path
    settings: Settings
    ledger: InMemoryLedger
    artifacts: InMemoryArtifacts
    executions: RecordingExecutions
    metrics: RecordingMetrics
    agent: Agent
    builds: InstantBuilds
    tracker: InMemoryTracker
    persistence: InMemoryIdempotency
    workflow: Workflow
    service: RunService
    effects: EffectRunner

    def create(self, key: str = "key-1") -> tuple[str, str]:
        created = self.service.create(CreateRunRequest(repository=str(self.repo), request="write tests"), key, REQUESTER)
        return created["run_id"], created["execution"]

    def run(self, run_id: str, execution: str, *stages: Stage) -> None:
        for stage in stages:
            self.workflow.run_stage(stage, run_id, execution, TOKEN if stage == Stage.AWAIT_REVIEW else None)

    def to_review(self, key: str = "key-1") -> tuple[str, str]:
        run_id, execution = self.create(key)
        self.run(run_id, execution, *UP_TO_REVIEW, Stage.AWAIT_REVIEW)
        return run_id, execution

    def approve(self, run_id: str) -> dict:
        digest = self.ledger.get_run(run_id).plan_digest
        return self.service.review(run_id, ReviewRequest(decision="approve", plan_digest=digest), REVIEWER)

    def ready_to_complete(self) -> tuple[str, str]:
        run_id, execution = self.to_review()
        self.approve(run_id)
        return run_id, execution


def build_world(tmp_path: Path, *, max_replans: int = 3, tracker: InMemoryTracker | None = None,
                receivers: dict[str, Receiver] | None = None, review_empty_plans: bool = False,
                agent: Agent | None = None) -> World:
    settings = memory_settings(tmp_path / "workspaces", max_replans, review_empty_plans)
    ledger, artifacts, executions, metrics = InMemoryLedger(), InMemoryArtifacts(), RecordingExecutions(), RecordingMetrics()
    sources, agent, builds = DirectorySources(), agent or InstantAgent(), InstantBuilds(artifacts)
    tracker = tracker or InMemoryTracker()
    persistence = InMemoryIdempotency()
    return World(
        repo=write_sample_repository(tmp_path / "repo"), settings=settings, ledger=ledger, artifacts=artifacts,
        executions=executions, metrics=metrics, agent=agent, builds=builds, tracker=tracker, persistence=persistence,
        workflow=Workflow(settings, ledger, artifacts, sources, agent, executions, metrics, builds),
        service=RunService(settings, ledger, artifacts, sources, executions, metrics, CursorSeal(CURSOR_KEY)),
        effects=EffectRunner(settings, ledger, artifacts, sources,
                             {"tickets": tracker} if receivers is None else receivers, persistence, metrics),
    )
