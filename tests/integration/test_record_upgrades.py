"""The ledgers earlier releases recorded (tests/fixtures/ledgers), put in the local stack's table
as DynamoDB held them, index attributes and all: the DynamoDB adapter reads them as the fakes do,
lists them by status and by time, and refuses a record a later release wrote."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
import pytest
from boto3.dynamodb.conditions import Key

from agentledger.adapters.dynamodb_ledger import LedgerStore, _to_dynamo, index_shard
from agentledger.errors import RecordSchemaError
from agentledger.local.runtime import REGION
from agentledger.models import RunStatus
from agentledger.records import RUN_SCHEMA_VERSION, RUN_SK, SCHEMA_VERSION, run_pk
from agentledger.testing.world import build_world
from tests.fixtures.ledgers import HERE, LedgerFixture, read_fixture

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

FIXTURES = [read_fixture(path) for path in sorted(HERE.glob("*/*.json"))]


@pytest.fixture
def table(runtime) -> Any:
    return boto3.resource("dynamodb", region_name=REGION).Table(runtime.output("LedgerTableName"))


@pytest.fixture
def put(table: Any) -> Iterator[Callable[[list[dict[str, Any]]], None]]:
    """Puts items in the stack's table, and takes their runs out again: other tests list its runs."""
    runs: set[str] = set()

    def put_items(items: list[dict[str, Any]]) -> None:
        with table.batch_writer() as batch:
            for item in items:
                batch.put_item(Item=_to_dynamo(item))
                runs.add(item["pk"])

    yield put_items
    for pk in runs:
        written = table.query(KeyConditionExpression=Key("pk").eq(pk))["Items"]
        with table.batch_writer() as batch:
            for item in written:
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})


@pytest.fixture
def ledger(runtime) -> LedgerStore:
    return LedgerStore(runtime.output("LedgerTableName"), boto3.resource("dynamodb", region_name=REGION))


@pytest.mark.parametrize("fixture", FIXTURES, ids=[fixture.name for fixture in FIXTURES])
def test_a_recorded_ledger_reads_from_dynamodb_as_from_the_fakes(
        fixture: LedgerFixture, table: Any, ledger: LedgerStore, put: Callable[[list[dict[str, Any]]], None],
        tmp_path: Path) -> None:
    world = build_world(tmp_path)
    fixture.load_into(world)
    put(world.ledger.items(fixture.run_id))

    loaded = ledger.load(fixture.run_id)
    assert loaded == world.ledger.load(fixture.run_id)
    assert ledger.get_run(fixture.run_id) == loaded.run
    listed, _ = ledger.list_runs(loaded.run.status, limit=100)
    assert fixture.run_id in [run.run_id for run in listed]

    changed = ledger.write(loaded.run, reason="read and written again by this release")
    item = table.get_item(Key={"pk": run_pk(fixture.run_id), "sk": RUN_SK})["Item"]
    assert item[SCHEMA_VERSION] == RUN_SCHEMA_VERSION
    # Written again, it moves from the unsharded index keys its release wrote to its shard's.
    shard = index_shard(fixture.run_id)
    assert (item["run_status"], item["entity"]) == (f"{changed.status.value}#{shard}", f"run#{shard}")


def test_a_run_a_later_release_wrote_is_refused_by_get_list_and_load(
        ledger: LedgerStore, put: Callable[[list[dict[str, Any]]], None]) -> None:
    needs_person = next(fixture for fixture in reversed(FIXTURES) if fixture.path.stem == "needs_person")
    run = next(item for item in needs_person.items if item["sk"] == RUN_SK)
    later = "run-from-a-later-release"
    put([{**run, "pk": run_pk(later), "run_id": later, "created_key": f"9999#{later}",
          SCHEMA_VERSION: RUN_SCHEMA_VERSION + 1}])
    for read in (lambda: ledger.get_run(later), lambda: ledger.load(later),
                 lambda: ledger.list_runs(RunStatus.NEEDS_PERSON, limit=100)):
        with pytest.raises(RecordSchemaError, match="a later release wrote it"):
            read()
