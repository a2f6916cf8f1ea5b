"""The token's write budget (pacing.py) in DynamoDB: one counter per window, a minute's and an
hour's, both taken in one transaction of conditional ADDs, so that every run's Lambda shares them
without a lock and a take one window refuses takes nothing from the other. The counters live in
the idempotency table, which the effect function already holds, under ids no Powertools record
can have ("budget#..."), and expire with its TTL."""
from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..errors import TransientError

if TYPE_CHECKING:
    from ..limits import WriteBudget

TTL_ATTRIBUTE = "expiration"  # Powertools' expiry attribute: the table's TTL
KEPT_AFTER_WINDOW_S = 3600
# DynamoDB cancels a transaction that meets another on the same item at the same moment: every run
# takes from these two counters, so a few of many writes at once meet. Such a take took nothing
# and is tried again after a short random wait, this many times in all.
CONFLICT_ATTEMPTS = 4
CONFLICT_WAIT_S = 0.1


class WriteBudgetTable:
    def __init__(self, table_name: str, dynamodb_resource: Any, name: str, budget: WriteBudget) -> None:
        self._client = dynamodb_resource.meta.client
        self._table_name = table_name
        self._name = name
        self._windows = ((60, budget.per_minute), (3600, budget.per_hour))

    def take(self, requests: int) -> float:
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            wait_s = self._take_once(requests)
            if wait_s is not None:
                return wait_s
            if attempt < CONFLICT_ATTEMPTS:
                time.sleep(random.uniform(0, CONFLICT_WAIT_S * attempt))  # noqa: S311 — spreading retries
        raise TransientError(f"the {self._name} write budget's counters met other takes at once {CONFLICT_ATTEMPTS} "
                             "times; nothing was taken, retry shortly")

    def _take_once(self, requests: int) -> float | None:
        """0 when both windows had room; else the seconds until every window that refused has room
        again; None when the transaction met another take (nothing taken either way)."""
        now = time.time()
        ends = [int(now // window_s) * window_s + window_s for window_s, _ in self._windows]
        try:
            self._client.transact_write_items(TransactItems=[
                self._update(f"budget#{self._name}#{window_s}#{end - window_s}", requests, allowed, end)
                for (window_s, allowed), end in zip(self._windows, ends, strict=True)])
        except ClientError as error:
            reasons = [reason.get("Code") for reason in error.response.get("CancellationReasons") or []]
            refused = [end for end, reason in zip(ends, reasons, strict=False) if reason == "ConditionalCheckFailed"]
            if refused:
                return max(refused) - now
            if "TransactionConflict" in reasons:
                return None
            raise
        return 0.0

    def _update(self, key: str, requests: int, allowed: int, ends: int) -> dict[str, Any]:
        return {"Update": {
            "TableName": self._table_name, "Key": {"id": key},
            "UpdateExpression": "ADD used :requests SET #expires = :expires",
            "ConditionExpression": "attribute_not_exists(used) OR used <= :room",
            "ExpressionAttributeNames": {"#expires": TTL_ATTRIBUTE},
            "ExpressionAttributeValues": {":requests": requests, ":room": allowed - requests,
                                          ":expires": ends + KEPT_AFTER_WINDOW_S}}}
