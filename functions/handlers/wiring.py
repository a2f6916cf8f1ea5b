"""Builds the workflow and the API service from the function's environment, once per
container (and once per configuration, so the local runtime can host several stacks)."""
from __future__ import annotations

from functools import lru_cache

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer

from agentledger.agent import load_agent
from agentledger.artifacts import ArtifactStore
from agentledger.config import Settings
from agentledger.executions import ExecutionControl
from agentledger.ledger import LedgerStore
from agentledger.service import RunService
from agentledger.sources import SourceResolver
from agentledger.workflow import Workflow

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@lru_cache(maxsize=8)
def _stores(settings: Settings) -> tuple[LedgerStore, ArtifactStore, SourceResolver]:
    ledger = LedgerStore(settings.ledger_table, boto3.resource("dynamodb"))
    artifacts = ArtifactStore(settings.artifact_bucket, boto3.client("s3"))
    return ledger, artifacts, SourceResolver(artifacts, settings.workspace_root)


@lru_cache(maxsize=8)
def _workflow(settings: Settings) -> Workflow:
    ledger, artifacts, sources = _stores(settings)
    executions = ExecutionControl(settings.state_machine_arn, boto3.client("stepfunctions")) if settings.state_machine_arn else None
    return Workflow(settings, ledger, artifacts, sources, load_agent(settings.agent_spec), executions)


@lru_cache(maxsize=8)
def _service(settings: Settings) -> RunService:
    ledger, artifacts, sources = _stores(settings)
    executions = ExecutionControl(settings.require_state_machine(), boto3.client("stepfunctions"))
    return RunService(settings, ledger, artifacts, sources, executions)


def workflow() -> Workflow:
    return _workflow(Settings.from_env())


def service() -> RunService:
    return _service(Settings.from_env())
