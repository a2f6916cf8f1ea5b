"""Parked build waits in their own DynamoDB table (BuildWaitTable): pk "build#<build id>" for a
wait on a running build, "room" for a wait for room to start one; sk "<queued at>#<run id>#<stage>",
so the room partition reads in the order the builds were asked for, and a stage's next parking
replaces its last. Items expire (TTL) after their task's timeout: they are hints, the ledger holds
the facts."""
from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from ..models import Stage
from ..ports import BuildWait

ROOM_PK = "room"
LAST_END_KEY = {"pk": "room-moved", "sk": "last build end"}
TTL_ATTRIBUTE = "expires_at"


def _key(wait: BuildWait) -> dict[str, str]:
    pk = ROOM_PK if wait.build_id is None else f"build#{wait.build_id}"
    return {"pk": pk, "sk": f"{wait.queued_at}#{wait.run_id}#{wait.stage.value}"}


class BuildWaitTable:
    def __init__(self, table_name: str, dynamodb_resource: Any) -> None:
        self._table = dynamodb_resource.Table(table_name)

    def park(self, wait: BuildWait, expires_in_s: int) -> None:
        item: dict[str, Any] = {**_key(wait), "run_id": wait.run_id, "stage": wait.stage.value,
                                "task_token": wait.task_token, "queued_at": wait.queued_at,
                                TTL_ATTRIBUTE: int(time.time()) + expires_in_s}
        if wait.build_id is not None:
            item["build_id"] = wait.build_id
        self._table.put_item(Item=item)

    def take(self, wait: BuildWait) -> bool:
        try:
            self._table.delete_item(Key=_key(wait), ConditionExpression="task_token = :token",
                                    ExpressionAttributeValues={":token": wait.task_token})
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def mark_build_ended(self, at: str) -> None:
        try:
            self._table.update_item(Key=LAST_END_KEY, UpdateExpression="SET ended_at = :at",
                                    ConditionExpression="attribute_not_exists(ended_at) OR ended_at < :at",
                                    ExpressionAttributeValues={":at": at})
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":  # a later end was marked
                raise

    def last_build_ended(self) -> str | None:
        item = self._table.get_item(Key=LAST_END_KEY).get("Item")
        return None if item is None else str(item["ended_at"])

    def waiting_for(self, build_id: str) -> list[BuildWait]:
        return self._query(f"build#{build_id}", None)

    def waiting_for_room(self, limit: int) -> list[BuildWait]:
        return self._query(ROOM_PK, limit)

    def _query(self, pk: str, limit: int | None) -> list[BuildWait]:
        """Unexpired parkings, oldest first (TTL deletes expired items only eventually)."""
        waits: list[BuildWait] = []
        arguments: dict[str, Any] = {"KeyConditionExpression": "pk = :pk",
                                     "FilterExpression": f"{TTL_ATTRIBUTE} > :now",
                                     "ExpressionAttributeValues": {":pk": pk, ":now": int(time.time())}}
        while limit is None or len(waits) < limit:
            page = self._table.query(**arguments)
            waits += [_wait(item) for item in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return waits if limit is None else waits[:limit]


def _wait(item: dict[str, Any]) -> BuildWait:
    return BuildWait(run_id=item["run_id"], stage=Stage(item["stage"]), task_token=item["task_token"],
                     queued_at=item["queued_at"], build_id=item.get("build_id"))
