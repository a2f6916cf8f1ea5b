"""The token's write budget on DynamoDB (moto): takes within a window are granted until it is
spent, never past it, even when runs take at once; a refusal names the wait until the window ends
and takes nothing; a take is one request, and one that meets another take is tried again."""
from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import Stubber

from agentledger.adapters.dynamodb_write_budget import CONFLICT_ATTEMPTS, WriteBudgetTable
from agentledger.errors import TransientError
from agentledger.limits import WriteBudget
from agentledger.local.runtime import REGION

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration
TABLE = f"write-budget-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def dynamodb(runtime) -> Iterator[Any]:
    """A table of its own in the local stack's DynamoDB (whose conditional writes are atomic, as
    DynamoDB's are), dropped afterwards."""
    resource = boto3.resource("dynamodb", region_name=REGION)
    table = resource.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                                  KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                                  AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}])
    yield resource
    table.delete()


def test_a_minutes_budget_is_granted_until_spent_and_then_names_the_wait_to_the_next_minute(dynamodb: Any) -> None:
    budget = WriteBudgetTable(TABLE, dynamodb, "github", WriteBudget(per_minute=9, per_hour=500))
    if 60 - time.time() % 60 < 5:  # all of the takes within one minute
        time.sleep(6)
    assert [budget.take(4), budget.take(4)] == [0.0, 0.0]
    refused = budget.take(4)  # 8 taken, 4 more would make 12
    assert 0 < refused <= 60
    assert budget.take(1) == 0.0  # the refusal took nothing: 9 now


def test_a_write_the_hour_refuses_gives_back_the_minutes_room_to_a_smaller_one(dynamodb: Any) -> None:
    budget = WriteBudgetTable(TABLE, dynamodb, "github", WriteBudget(per_minute=8, per_hour=5))
    if 60 - time.time() % 60 < 5:  # all of the takes within one minute
        time.sleep(6)
    assert budget.take(4) == 0.0
    assert budget.take(4) > 0  # the minute had room (8), the hour had not (5)
    assert budget.take(1) == 0.0  # fits both: the refused write took none of the minute's room


def test_runs_taking_at_once_never_spend_more_than_the_hours_budget(dynamodb: Any) -> None:
    budget = WriteBudgetTable(TABLE, dynamodb, "github", WriteBudget(per_minute=1000, per_hour=20))
    with ThreadPoolExecutor(max_workers=8) as pool:
        waits = list(pool.map(lambda _: budget.take(4), range(12)))
    assert sum(1 for wait in waits if wait == 0.0) == 5  # 5 x 4 = 20
    assert all(0 < wait <= 3600 for wait in waits if wait)


def test_a_take_of_both_windows_is_one_request_granted_or_refused(dynamodb: Any) -> None:
    budget = WriteBudgetTable(TABLE, dynamodb, "github", WriteBudget(per_minute=8, per_hour=5))
    sent: list[str] = []
    dynamodb.meta.client.meta.events.register("before-call.dynamodb", lambda model, **_: sent.append(model.name))
    budget.take(4)
    budget.take(4)  # the hour refuses
    assert sent == ["TransactWriteItems", "TransactWriteItems"]


def _conflict(stubber: Stubber) -> None:
    stubber.add_client_error("transact_write_items", "TransactionCanceledException", modeled_fields={
        "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]})


def test_a_take_that_meets_another_is_tried_again_and_past_its_attempts_is_a_transient_error() -> None:
    resource = boto3.resource("dynamodb", region_name=REGION)
    budget = WriteBudgetTable(TABLE, resource, "github", WriteBudget(per_minute=80, per_hour=500))
    with Stubber(resource.meta.client) as stubber:
        _conflict(stubber)
        _conflict(stubber)
        stubber.add_response("transact_write_items", {})
        assert budget.take(4) == 0.0
        for _ in range(CONFLICT_ATTEMPTS):
            _conflict(stubber)
        with pytest.raises(TransientError, match="nothing was taken"):
            budget.take(4)
        stubber.assert_no_pending_responses()
