"""Listing runs from a ledger whose index keys are spread over shards (DynamoDB on moto): every run
once, newest first, page after page, by status and by time, with the runs an earlier release wrote
(unsharded keys) among them; and a run's index writes land in its shard, not in one partition."""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from agentledger.adapters.dynamodb_ledger import INDEX_SHARDS, LedgerStore, _run_item, _to_dynamo
from agentledger.deploy.constructs.storage import LEDGER_INDEXES
from agentledger.local.runtime import REGION
from agentledger.models import Run, RunStatus
from agentledger.records import new_decision
from agentledger.states import DecisionKind

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration
TABLE = f"ledger-{uuid.uuid4().hex[:8]}"
RUNS = 40


@pytest.fixture
def dynamodb(runtime) -> Iterator[Any]:
    """A ledger table of its own (the stack's keys and indexes) in the local stack's DynamoDB,
    dropped afterwards: the stack's own table holds other tests' runs."""
    resource = boto3.resource("dynamodb", region_name=REGION)
    attributes = {"pk", "sk", *(name for keys in LEDGER_INDEXES.values() for name in keys)}
    table = resource.create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in sorted(attributes)],
        GlobalSecondaryIndexes=[{"IndexName": index, "Projection": {"ProjectionType": "ALL"},
                                 "KeySchema": [{"AttributeName": partition, "KeyType": "HASH"},
                                               {"AttributeName": sort, "KeyType": "RANGE"}]}
                                for index, (partition, sort) in LEDGER_INDEXES.items()])
    yield resource
    table.delete()


def _run(n: int, status: RunStatus) -> Run:
    return Run(run_id=f"run-{n:020d}", request="add tests", repository="/repo", revision="r1", environment="dev",
               status=status, created_at=f"2026-12-06T10:{n // 60:02d}:{n % 60:02d}.000+00:00")


def _every_page(ledger: LedgerStore, status: RunStatus | None, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        runs, cursor = ledger.list_runs(status, limit, cursor)
        pages.append([run.run_id for run in runs])
        if cursor is None:
            return pages


def test_runs_are_listed_once_each_newest_first_across_every_shard_and_the_unsharded_keys(dynamodb: Any) -> None:
    ledger = LedgerStore(TABLE, dynamodb)
    runs = [_run(n, RunStatus.AWAITING_REVIEW if n % 3 else RunStatus.COMPLETE) for n in range(RUNS)]
    for run in runs[:-2]:
        ledger.create_run(run, new_decision(DecisionKind.CREATED, "created", {}))
    # Two runs as a release before the shards stored them: one index key for every run.
    table = dynamodb.Table(TABLE)
    for run in runs[-2:]:
        table.put_item(Item={**_run_item(run), "entity": "run", "run_status": run.status.value})
    assert len({_to_dynamo(_run_item(run))["entity"] for run in runs}) == INDEX_SHARDS  # spread over all of them

    newest_first = [run.run_id for run in sorted(runs, key=lambda run: run.created_at, reverse=True)]
    pages = _every_page(ledger, None, 7)
    assert [run_id for page in pages for run_id in page] == newest_first
    assert all(len(page) == 7 for page in pages[:-1])
    waiting = _every_page(ledger, RunStatus.AWAITING_REVIEW, 5)
    assert [run_id for page in waiting for run_id in page] == [
        run.run_id for run in sorted(runs, key=lambda run: run.created_at, reverse=True)
        if run.status == RunStatus.AWAITING_REVIEW]


def test_a_run_moved_to_another_status_is_listed_under_its_new_status_only(dynamodb: Any) -> None:
    ledger = LedgerStore(TABLE, dynamodb)
    run = ledger.create_run(_run(1, RunStatus.RUNNING), new_decision(DecisionKind.CREATED, "created", {}))
    ledger.write(run, reason="waits for review", status=RunStatus.AWAITING_REVIEW)
    assert [r.run_id for r in ledger.list_runs(RunStatus.AWAITING_REVIEW)[0]] == [run.run_id]
    assert ledger.list_runs(RunStatus.RUNNING)[0] == []
