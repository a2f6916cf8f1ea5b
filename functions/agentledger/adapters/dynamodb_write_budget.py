"""The token's write budget (pacing.py) in DynamoDB: one counter per window, a minute's and an
hour's, taken with a conditional ADD so that every run's Lambda shares it without a lock. The
counters live in the idempotency table, which the effect function already holds, under ids no
Powertools record can have ("budget#..."), and expire with its TTL."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from ..limits import WriteBudget

TTL_ATTRIBUTE = "expiration"  # Powertools' expiry attribute: the table's TTL
KEPT_AFTER_WINDOW_S = 3600


class WriteBudgetTable:
    def __init__(self, table_name: str, dynamodb_resource: Any, name: str, budget: WriteBudget) -> None:
        self._table = dynamodb_resource.Table(table_name)
        self._name = name
        self._windows = ((60, budget.per_minute), (3600, budget.per_hour))

    def take(self, requests: int) -> float:
        now = time.time()
        taken: list[str] = []
        for window_s, allowed in self._windows:
            start = int(now // window_s) * window_s
            key = f"budget#{self._name}#{window_s}#{start}"
            if not self._take(key, requests, allowed, start + window_s):
                # Nothing is sent, so a shorter window's take is given back: else a write the hour
                # refused would keep the minute's room from a smaller one that fits both.
                for earlier in taken:
                    self._table.update_item(Key={"id": earlier}, UpdateExpression="ADD used :requests",
                                            ExpressionAttributeValues={":requests": -requests})
                return start + window_s - now
            taken.append(key)
        return 0.0

    def _take(self, key: str, requests: int, allowed: int, ends: int) -> bool:
        try:
            self._table.update_item(
                Key={"id": key}, UpdateExpression="ADD used :requests SET #expires = :expires",
                ConditionExpression="attribute_not_exists(used) OR used <= :room",
                ExpressionAttributeNames={"#expires": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":requests": requests, ":room": allowed - requests,
                                           ":expires": ends + KEPT_AFTER_WINDOW_S})
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True
