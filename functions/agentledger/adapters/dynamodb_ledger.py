"""The run ledger in DynamoDB: one item collection per run (pk = RUN#id).

Every change to a run is one transaction conditioned on the run's version, so two workers can
never both advance a run, and a move the transition table forbids writes nothing.

The two indexes that list runs are keyed by status (by_status) and by nothing (by_time), a handful
of values: every write of every run would land in one or a few index partitions, which bind at
about 1,000 writes a second each (docs/operations/capacity.md). Their partition keys are spread
over INDEX_SHARDS by a hash of the run id, and a listing reads every shard and merges them, newest
first; its cursor is the last run's `created_key`, unique across shards. Runs written by releases
before the shards keep their unsharded keys until written again, and are listed with the rest."""
from __future__ import annotations

import base64
import hashlib
import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..errors import ConcurrentModificationError, RunAlreadyExistsError, RunNotFoundError
from ..records import RUN_SK, created_transition, read_ledger, read_run, run_pk, stored_item
from ..transitions import next_version

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..models import Decision, Ledger, Record, Run, RunState, RunStatus

INDEX_BY_STATUS = "by_status"
INDEX_BY_TIME = "by_time"
MAX_PAGE = 100
INDEX_SHARDS = 8
RUN_ENTITY = "run"
# A cursor names the last run listed; one of an earlier release (a whole index key) is read the same way.
_CURSOR_ATTRIBUTES = frozenset({"pk", "sk", "run_status", "entity", "created_key"})


def _to_dynamo(value: Any, top_level: bool = True) -> Any:
    """Floats become Decimals; unset optional fields of a record are left out, while nulls inside
    free-form documents (tool responses, decision details) are kept as they came."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v, False) for k, v in value.items() if not (top_level and v is None)}
    if isinstance(value, list):
        return [_to_dynamo(v, False) for v in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    return value


def index_shard(run_id: str) -> int:
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) % INDEX_SHARDS


def _index_partitions(base: str) -> list[str]:
    """Every partition of one index key: its shards, and the unsharded key earlier releases wrote."""
    return [f"{base}#{shard}" for shard in range(INDEX_SHARDS)] + [base]


def _run_item(run: Run) -> dict[str, Any]:
    item = stored_item(run.run_id, run)
    shard = index_shard(run.run_id)
    item.update(
        entity=f"{RUN_ENTITY}#{shard}",
        run_status=f"{run.status.value}#{shard}",
        created_key=f"{run.created_at}#{run.run_id}",
    )
    return _to_dynamo(item)


class LedgerStore:
    def __init__(self, table_name: str, dynamodb_resource: Any) -> None:
        self._table = dynamodb_resource.Table(table_name)
        self._client = self._table.meta.client
        self._table_name = table_name

    # -- reads ---------------------------------------------------------------------------
    def get_run(self, run_id: str) -> Run:
        item = self._table.get_item(Key={"pk": run_pk(run_id), "sk": RUN_SK}, ConsistentRead=True).get("Item")
        if item is None:
            raise RunNotFoundError(f"no run with id {run_id!r}")
        return read_run(_from_dynamo(item))

    def load(self, run_id: str) -> Ledger:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": run_pk(run_id)},
            "ConsistentRead": True,
        }
        while True:
            page = self._table.query(**kwargs)
            items.extend(_from_dynamo(i) for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return read_ledger(run_id, items)

    def list_runs(
        self, status: RunStatus | None = None, limit: int = 20, cursor: str | None = None
    ) -> tuple[list[Run], str | None]:
        index, attribute, base = ((INDEX_BY_TIME, "entity", RUN_ENTITY) if status is None
                                  else (INDEX_BY_STATUS, "run_status", status.value))
        limit = max(1, min(limit, MAX_PAGE))
        condition = f"{attribute} = :partition"
        values: dict[str, str] = {}
        if cursor:
            condition += " AND created_key < :before"
            values[":before"] = decode_cursor(cursor)["created_key"]
        items: list[dict[str, Any]] = []
        more = False
        for partition in _index_partitions(base):
            page = self._table.query(IndexName=index, KeyConditionExpression=condition, ScanIndexForward=False,
                                     Limit=limit, ExpressionAttributeValues={**values, ":partition": partition})
            items += page["Items"]
            more = more or "LastEvaluatedKey" in page
        items.sort(key=lambda item: item["created_key"], reverse=True)
        listed = items[:limit]
        runs = [read_run(_from_dynamo(item)) for item in listed]
        if not (more or len(items) > limit) or not listed:
            return runs, None
        return runs, encode_cursor({"created_key": listed[-1]["created_key"]})

    # -- writes --------------------------------------------------------------------------
    def create_run(self, run: Run, decision: Decision) -> Run:
        transition = created_transition()
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": self._table_name, "Item": _run_item(run),
                             "ConditionExpression": "attribute_not_exists(pk)"}},
                    self._put(run.run_id, transition),
                    self._put(run.run_id, decision),
                ]
            )
        except ClientError as error:
            if _is_condition_failure(error):
                raise RunAlreadyExistsError(f"run {run.run_id} already exists") from error
            raise
        return run

    def write(
        self,
        run: Run,
        *,
        reason: str,
        execution: str | None = None,
        to_state: RunState | None = None,
        status: RunStatus | None = None,
        changes: dict[str, Any] | None = None,
        records: Sequence[Record] = (),
    ) -> Run:
        """Commit a change to a run and the records that go with it, all or nothing, only if
        nobody else changed the run since `run` was read."""
        updated, records = next_version(run, reason=reason, execution=execution, to_state=to_state, status=status,
                                        changes=changes, records=records)
        items = [
            {"Put": {"TableName": self._table_name, "Item": _run_item(updated),
                     "ConditionExpression": "version = :v",
                     "ExpressionAttributeValues": {":v": run.version}}}
        ]
        items.extend(self._put(run.run_id, record) for record in records)
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if _is_condition_failure(error):
                raise ConcurrentModificationError(
                    f"run {run.run_id} changed since version {run.version} was read; nothing was written"
                ) from error
            raise
        return updated

    def append(self, run_id: str, record: Record) -> None:
        """Records that do not change the run itself: decisions, and effect progress (whose
        races Powertools idempotency and the receiver reconciliation settle)."""
        self._table.put_item(Item=self._put(run_id, record)["Put"]["Item"])

    def _put(self, run_id: str, record: Record) -> dict[str, Any]:
        return {"Put": {"TableName": self._table_name, "Item": _to_dynamo(stored_item(run_id, record))}}


def _is_condition_failure(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    if code == "ConditionalCheckFailedException":
        return True
    if code == "TransactionCanceledException":
        reasons = error.response.get("CancellationReasons") or []
        return any(r.get("Code") == "ConditionalCheckFailed" for r in reasons) or "ConditionalCheckFailed" in str(error)
    return False


def encode_cursor(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(_from_dynamo(key), sort_keys=True).encode()).decode()


def decode_cursor(cursor: str) -> dict[str, Any]:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, json.JSONDecodeError) as error:
        raise ValueError("cursor is not one this API returned") from error
    if (not isinstance(key, dict) or "created_key" not in key or not set(key) <= _CURSOR_ATTRIBUTES
            or not all(isinstance(v, str) for v in key.values())):
        raise ValueError("cursor is not one this API returned")
    return key
