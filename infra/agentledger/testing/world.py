"""One run's world on the in-memory adapters: a repository copied into a scratch directory, the
Workflow, RunService and EffectRunner wired to the same ledger, artifacts and executions."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.config import ApiSettings, EffectSettings, ReviewRequestSettings
from agentledger.cursors import CursorSeal
from agentledger.deploy import SAMPLE_REPOSITORY
from agentledger.effects import EffectRunner
from agentledger.models import Stage
from agentledger.service import CreateRunRequest, ReviewRequest, RunService
from agentledger.states import Verdict
from agentledger.testing.adapters import (
    DirectorySources,
    InMemoryArtifacts,
    InMemoryLedger,
    RecordingExecutions,
    RecordingMetrics,
)
from agentledger.testing.agent import InstantAgent
from agentledger.testing.builds import InstantBuilds
from agentledger.testing.effects import InMemoryIdempotency, InMemoryTracker
from agentledger.workflow import Workflow

if TYPE_CHECKING:
    from pathlib import Path

    from agentledger.agent import Agent
    from agentledger.ports import Receiver

TOKEN = "task-token-1"
CURSOR_KEY = b"memory-cursor-signing-key"
# Callers as API Gateway's IAM authorization names them.
REQUESTER = "arn:aws:iam::123456789012:user/requester"
REVIEWER = "arn:aws:iam::123456789012:user/reviewer"
OPERATOR = "arn:aws:sts::123456789012:assumed-role/operator/on-call"
UP_TO_REVIEW = (Stage.INSPECT, Stage.PLAN, Stage.EXECUTE, Stage.VERIFY)


class MemorySettings(ApiSettings, ReviewRequestSettings, EffectSettings):
    """Every function's settings at once: the world wires the workflow, the effects and the API to
    one ledger."""


def memory_settings(workspace_root: Path, max_replans: int = 3, review_empty_plans: bool = False) -> MemorySettings:
    return MemorySettings(
        ledger_table="ledger", artifact_bucket="memory-bucket", idempotency_table="idempotency",
        environment="dev", state_machine_arn="arn:memory:stateMachine:run", workspace_root=workspace_root,
        max_replans=max_replans, review_empty_plans=review_empty_plans, workspace_retention_hours=24,
        archive_max_members=20_000, archive_max_bytes=1 << 30, archive_max_ratio=100,
        test_timeout_limit_s=3600, build_images=("aws/codebuild/standard:7.0",),
        build_computes=("BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_MEDIUM", "BUILD_GENERAL1_LARGE"),
        agent_spec="", writer="pynguin", generation_module_seconds=60,
        generation_run_seconds=600, generation_iterations=1000, generation_runs=5, mutation_module_seconds=60,
        mutation_run_seconds=300, bedrock_model_id="",
        bedrock_max_tokens=4096, bedrock_temperature=0.0, bedrock_max_reasks=2, bedrock_prices=(0.0, 0.0),
        notification_topic_arn="arn:memory:topic", github_api_url="https://github.invalid",
        github_repository="", github_base_branch="main", github_token_secret_arn="arn:memory:secret",
        cursor_signing_secret_arn="arn:memory:cursor-secret", allow_self_approval=False,
        artifact_link_seconds=600, local_repository_roots=(), artifact_link_endpoint=None, bedrock_profile=None)


@dataclass
class World:
    repo: Path
    settings: MemorySettings
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
        request = CreateRunRequest(repository=str(self.repo), request="write tests")
        created = self.service.create(request, key, REQUESTER)
        return created["run_id"], created["execution"]

    def run(self, run_id: str, execution: str, *stages: Stage) -> None:
        """Each stage, called again while its build runs, as the state machine's wait loop does."""
        for stage in stages:
            self.stage(stage, run_id, execution)

    def stage(self, stage: Stage, run_id: str, execution: str) -> dict[str, Any]:
        """The stage, called again while its build runs (a stage that starts one hands the look
        at it to the state machine's wait), and its last answer."""
        token = TOKEN if stage == Stage.AWAIT_REVIEW else None
        while not (outcome := self.workflow.run_stage(stage, run_id, execution, token))["done"]:
            pass
        return outcome

    def to_review(self, key: str = "key-1") -> tuple[str, str]:
        run_id, execution = self.create(key)
        self.run(run_id, execution, *UP_TO_REVIEW, Stage.AWAIT_REVIEW)
        return run_id, execution

    def approve(self, run_id: str) -> dict:
        digest = self.ledger.get_run(run_id).plan_digest
        return self.service.review(run_id, ReviewRequest(decision=Verdict.APPROVE, plan_digest=digest or ""), REVIEWER)

    def ready_to_complete(self) -> tuple[str, str]:
        run_id, execution = self.to_review()
        self.approve(run_id)
        return run_id, execution


def build_world(tmp_path: Path, *, max_replans: int = 3, tracker: InMemoryTracker | None = None,
                receivers: dict[str, Receiver] | None = None, review_empty_plans: bool = False,
                agent: Agent | None = None, repository: Path = SAMPLE_REPOSITORY) -> World:
    """A world under `tmp_path` whose runs read a copy of `repository` (by default the demo's sample,
    textkit) and whose agent is `agent` (by default the reference agent, counting its calls)."""
    settings = memory_settings(tmp_path / "workspaces", max_replans, review_empty_plans)
    ledger, artifacts = InMemoryLedger(), InMemoryArtifacts()
    executions, metrics = RecordingExecutions(), RecordingMetrics()
    sources, agent, builds = DirectorySources(), agent or InstantAgent(), InstantBuilds(artifacts)
    tracker = tracker or InMemoryTracker()
    persistence = InMemoryIdempotency()
    return World(
        repo=_copied(repository, tmp_path / "repo"), settings=settings, ledger=ledger, artifacts=artifacts,
        executions=executions, metrics=metrics, agent=agent, builds=builds, tracker=tracker, persistence=persistence,
        workflow=Workflow(settings, ledger, artifacts, sources, agent, executions, metrics, builds),
        service=RunService(settings, ledger, artifacts, sources, executions, metrics, CursorSeal(CURSOR_KEY)),
        effects=EffectRunner(settings, ledger, artifacts, sources,
                             {"tickets": tracker} if receivers is None else receivers, persistence, metrics),
    )


def _copied(repository: Path, destination: Path) -> Path:
    shutil.copytree(repository, destination, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    return destination
