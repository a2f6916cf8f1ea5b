"""Builds the workflow, the effects and the API service from the function's settings, once per
container (and once per configuration, so the local runtime can host several stacks).

Imported at the first invocation that builds something (agentledger.handlers.wiring loads it lazily), never
on a handler module's import path: boto3, the adapters, the agent and the workflow are what a
cold start would otherwise pay for before the handler runs."""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from botocore.config import Config

from agentledger import metric_names
from agentledger.adapters.codebuild import CodeBuildBuilds, CodeBuildStatus, SecretParameters
from agentledger.adapters.dynamodb_build_waits import BuildWaitTable
from agentledger.adapters.dynamodb_ledger import LedgerStore
from agentledger.adapters.dynamodb_write_budget import WriteBudgetTable
from agentledger.adapters.receivers import GitHubApi, GitHubIssues, GitHubPullRequests, SnsNotifications
from agentledger.adapters.repositories import SourceResolver
from agentledger.adapters.s3_artifacts import ArtifactStore
from agentledger.adapters.stepfunctions import ExecutionControl
from agentledger.adapters.throttling import RETRY_CONFIG, report_throttles
from agentledger.agent import (
    Agent,
    BedrockPlanner,
    BedrockSettings,
    DocstringExamplePlanner,
    ReferenceAgent,
    load_agent,
)
from agentledger.config import (
    ApiSettings,
    BuildEndedSettings,
    BuildSettings,
    BuildWatchSettings,
    EffectSettings,
    FunctionSettings,
    KeeperSettings,
    NotificationSettings,
    WorkflowSettings,
)
from agentledger.cursors import CursorSeal
from agentledger.effects import EffectRunner
from agentledger.limits import GITHUB_CONTENT_BUDGET
from agentledger.pacing import PacedReceiver
from agentledger.service import RunService
from agentledger.workflow import Workflow
from agentledger.workflow.build_waits import BuildEnds, BuildParking

from .telemetry import logger, metrics

if TYPE_CHECKING:
    from agentledger.ports import Receiver

TOKEN_CACHE_SECONDS = 300
# Well inside EffectFunction's 15 s, so a slow receiver leaves time to record what came back.
RECEIVER_TIMEOUT_SECONDS = 5.0


class PowertoolsMetricSink:
    """The workflow's metrics as CloudWatch EMF, flushed by @metrics.log_metrics."""

    def count(self, name: str, value: float = 1) -> None:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)

    def seconds(self, name: str, value: float, stage: str | None = None) -> None:
        if stage is None:
            metrics.add_metric(name=name, unit=MetricUnit.Seconds, value=value)
            return
        with single_metric(name=name, unit=MetricUnit.Seconds, value=value,
                           namespace=metric_names.NAMESPACE) as metric:
            metric.add_dimension(name=metric_names.STAGE_DIMENSION, value=stage)


sink = PowertoolsMetricSink()


def _record_throttle(service: str, operation: str, code: str) -> None:
    """Each throttle AWS answered: counted by service, where a quota starting to bind shows on the
    dashboard, and logged with the call, correlated with the run the invocation works on."""
    logger.warning("throttled by AWS", extra={"aws_service": service, "operation": operation, "error_code": code})
    with single_metric(name=metric_names.THROTTLED, unit=MetricUnit.Count, value=1,
                       namespace=metric_names.NAMESPACE) as metric:
        metric.add_dimension(name=metric_names.AWS_SERVICE_DIMENSION, value=service)


def _client(service: str, config: Config | None = None, endpoint_url: str | None = None) -> Any:
    """A client that retries throttles with backoff and reports each one (adapters/throttling.py)."""
    merged = RETRY_CONFIG.merge(config) if config is not None else RETRY_CONFIG
    # boto3-stubs types the service as one literal name per service; boto3 takes any it knows.
    return report_throttles(boto3.client(service, config=merged, endpoint_url=endpoint_url),  # type: ignore[call-overload]
                            _record_throttle)


def _dynamodb() -> Any:
    dynamodb = boto3.resource("dynamodb", config=RETRY_CONFIG)
    report_throttles(dynamodb.meta.client, _record_throttle)
    return dynamodb


@lru_cache(maxsize=8)
def _stores(settings: FunctionSettings) -> tuple[LedgerStore, ArtifactStore, SourceResolver]:
    ledger = LedgerStore(settings.ledger_table, _dynamodb())
    s3 = _client("s3")
    # Links and upload grants are SigV4 (S3 no longer takes SigV2 for new buckets), on loopback locally.
    links = _client("s3", endpoint_url=settings.artifact_link_endpoint, config=Config(signature_version="s3v4"))
    artifacts = ArtifactStore(settings.artifact_bucket, s3, links)
    sources = SourceResolver(artifacts, settings.workspace_root, settings.local_repository_roots,
                             settings.archive_limits)
    return ledger, artifacts, sources


@lru_cache(maxsize=8)
def workflow(settings: WorkflowSettings) -> Workflow:
    ledger, artifacts, sources = _stores(settings)
    executions = (ExecutionControl(settings.state_machine_arn, _client("stepfunctions"))
                  if isinstance(settings, KeeperSettings) else None)
    builds = (CodeBuildBuilds(settings.test_build_project, _client("codebuild"),
                              SecretParameters(_client("ssm"), settings.output_grant_path,
                                               settings.output_grant_key))
              if isinstance(settings, BuildSettings) else None)
    return Workflow(settings, ledger, artifacts, sources, _agent(settings), executions, sink, builds)


@lru_cache(maxsize=8)
def build_parking(settings: BuildWatchSettings) -> BuildParking:
    return BuildParking(CodeBuildStatus(_client("codebuild")), BuildWaitTable(settings.build_wait_table, _dynamodb()))


@lru_cache(maxsize=8)
def build_ends(settings: BuildEndedSettings) -> BuildEnds:
    return BuildEnds(BuildWaitTable(settings.build_wait_table, _dynamodb()),
                     ExecutionControl(settings.state_machine_arn, _client("stepfunctions")))


def _agent(settings: WorkflowSettings) -> Agent:
    """A custom agent if one is configured, else the reference agent with the configured writer."""
    if settings.agent_spec:
        return load_agent(settings.agent_spec)
    limits = settings.generation_limits
    if settings.writer == "doctest":
        return ReferenceAgent(planner=DocstringExamplePlanner(limits), limits=limits)
    if settings.writer != "bedrock":
        return ReferenceAgent(limits=limits)
    client = boto3.Session(profile_name=settings.bedrock_profile).client("bedrock-runtime")
    planner = BedrockPlanner(client, BedrockSettings(
        model_id=settings.bedrock_model_id, max_tokens=settings.bedrock_max_tokens,
        temperature=settings.bedrock_temperature, max_reasks=settings.bedrock_max_reasks,
        prices={"input": settings.bedrock_prices[0], "output": settings.bedrock_prices[1]}), limits)
    return ReferenceAgent(planner=planner, limits=limits)


def _receivers(settings: NotificationSettings) -> dict[str, Receiver]:
    receivers: dict[str, Receiver] = {
        "notifications": SnsNotifications(settings.notification_topic_arn, _client("sns"))}
    if isinstance(settings, EffectSettings) and settings.github_repository:
        token = parameters.get_secret(settings.github_token_secret_arn, max_age=TOKEN_CACHE_SECONDS)
        github = GitHubApi(settings.github_api_url, settings.github_repository, str(token), RECEIVER_TIMEOUT_SECONDS)
        # Both spend the one token's budget.
        budget = WriteBudgetTable(settings.idempotency_table, _dynamodb(), "github", GITHUB_CONTENT_BUDGET)
        receivers["tickets"] = PacedReceiver(GitHubIssues(github), budget, GitHubIssues.CONTENT_REQUESTS)
        receivers["pull_requests"] = PacedReceiver(GitHubPullRequests(github, settings.github_base_branch), budget,
                                                   GitHubPullRequests.CONTENT_REQUESTS)
    return receivers


@lru_cache(maxsize=8)
def idempotency_store(table: str, function: str) -> DynamoDBPersistenceLayer:
    """Powertools' record of one idempotent function's calls, built once per container as its
    documentation keeps it (each new one builds a DynamoDB client, which loads the service's whole
    model). One per function, never shared: a store takes the configuration (the key's path) of
    the first function that uses it and keeps it."""
    return DynamoDBPersistenceLayer(table_name=table, boto3_client=_client("dynamodb"))


@lru_cache(maxsize=8)
def effects(settings: NotificationSettings) -> EffectRunner:
    ledger, artifacts, sources = _stores(settings)
    return EffectRunner(settings, ledger, artifacts, sources, _receivers(settings),
                        idempotency_store(settings.idempotency_table, "effects"), sink)


@lru_cache(maxsize=8)
def _service(settings: ApiSettings) -> RunService:
    ledger, artifacts, sources = _stores(settings)
    executions = ExecutionControl(settings.state_machine_arn, _client("stepfunctions"))
    key = parameters.get_secret(settings.cursor_signing_secret_arn, max_age=TOKEN_CACHE_SECONDS)
    return RunService(settings, ledger, artifacts, sources, executions, sink, CursorSeal(str(key).encode()))


def service() -> RunService:
    """The API's routes build it from the settings the api handler read (ApiSettings.from_env is cached)."""
    return _service(ApiSettings.from_env())
