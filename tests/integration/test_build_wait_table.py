"""The build wait table on the local stack's DynamoDB (moto): room waits read in the order the builds were asked for,
a parking is taken once and only on its own token, and an expired parking is not offered."""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from agentledger.adapters.dynamodb_build_waits import BuildWaitTable
from agentledger.local.runtime import REGION
from agentledger.models import Stage
from agentledger.ports import BuildWait

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration
TABLE = f"build-waits-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def dynamodb(runtime) -> Iterator[Any]:
    """A table of its own in the local stack's DynamoDB, dropped afterwards."""
    resource = boto3.resource("dynamodb", region_name=REGION)
    table = resource.create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")])
    yield resource
    table.delete()


def _wait(run: str, queued_at: str, token: str, build_id: str | None = None) -> BuildWait:
    return BuildWait(run, Stage.VERIFY, token, queued_at, build_id)


def test_room_waits_are_offered_oldest_first_and_each_is_taken_once(dynamodb: Any) -> None:
    table = BuildWaitTable(TABLE, dynamodb)
    later = _wait("run-b", "2026-12-06T10:00:02+00:00", "t-b")
    earlier = _wait("run-a", "2026-12-06T10:00:01+00:00", "t-a")
    for wait in (later, earlier):
        table.park(wait, 60)
    table.park(_wait("run-c", "2026-12-06T10:00:00+00:00", "t-c", build_id="project:1"), 60)  # waits on a build

    assert table.waiting_for_room(5) == [earlier, later]
    assert table.waiting_for_room(1) == [earlier]
    assert table.take(earlier) and not table.take(earlier)
    assert table.waiting_for_room(5) == [later]
    assert table.waiting_for("project:1") == [_wait("run-c", "2026-12-06T10:00:00+00:00", "t-c", "project:1")]


def test_a_stage_parked_again_replaces_its_parking_and_the_old_token_takes_nothing(dynamodb: Any) -> None:
    table = BuildWaitTable(TABLE, dynamodb)
    old, new = _wait("run-a", "2026-12-06T10:00:01+00:00", "old"), _wait("run-a", "2026-12-06T10:00:01+00:00", "new")
    table.park(old, 60)
    table.park(new, 60)
    assert table.waiting_for_room(5) == [new]
    assert not table.take(old)
    assert table.take(new)


def test_an_expired_parking_is_not_offered(dynamodb: Any) -> None:
    table = BuildWaitTable(TABLE, dynamodb)
    table.park(_wait("run-a", "2026-12-06T10:00:01+00:00", "gone"), -1)  # its task timed out long ago
    table.park(_wait("run-b", "2026-12-06T10:00:02+00:00", "live"), 60)
    assert [wait.task_token for wait in table.waiting_for_room(5)] == ["live"]


def test_the_last_build_end_only_moves_forward(dynamodb: Any) -> None:
    table = BuildWaitTable(TABLE, dynamodb)
    assert table.last_build_ended() is None
    table.mark_build_ended("2026-12-06T10:00:02.000+00:00")
    table.mark_build_ended("2026-12-06T10:00:01.000+00:00")  # an event delivered late
    assert table.last_build_ended() == "2026-12-06T10:00:02.000+00:00"
    assert table.waiting_for_room(5) == []  # not a wait
