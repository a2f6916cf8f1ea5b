"""In-memory receivers and Powertools idempotency persistence, for the effect runner's unit tests."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import (
    STATUS_CONSTANTS,
    BasePersistenceLayer,
    DataRecord,
)

from agentledger.ports import Confirmation, ReceiverErrorResponse, ReceiverNoResponseError

DROP_RESPONSE = "drop_response"  # accept and store the write, then lose the answer
UNAVAILABLE = "unavailable"  # answer 503 without storing anything


class InMemoryTracker:
    """A receiver searched by the key each write carries; faults are queued for the next writes."""

    name = "memory-tracker"

    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []
        self.faults: deque[str] = deque()
        self.writes = 0
        self.looks = 0  # find() calls

    def copies(self, key: str) -> int:
        return sum(1 for stored, _ in self.records if stored == key)

    def find(self, key: str) -> list[Confirmation]:
        self.looks += 1
        return [Confirmation(receiver_id=f"#{number}") for number, (stored, _) in enumerate(self.records, 1)
                if stored == key]

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        self.writes += 1
        fault = self.faults.popleft() if self.faults else None
        if fault == UNAVAILABLE:
            raise ReceiverErrorResponse("tracker answered 503", {"status": 503})
        self.records.append((key, payload))
        if fault == DROP_RESPONSE:
            raise ReceiverNoResponseError("the tracker's answer was lost")
        return Confirmation(receiver_id=f"#{len(self.records)}")

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        return confirmation


class InMemoryIdempotency(BasePersistenceLayer):
    """Powertools' persistence contract (as its DynamoDB layer keeps it) in a dictionary: a put
    fails while an unexpired record holds the key, unless that record is an expired lock."""

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[str, DataRecord] = {}
        self._lock = threading.Lock()

    def _get_record(self, idempotency_key: str) -> DataRecord:
        with self._lock:
            if idempotency_key not in self._records:
                raise IdempotencyItemNotFoundError
            return self._records[idempotency_key]

    def _put_record(self, data_record: DataRecord) -> None:
        with self._lock:
            held = self._records.get(data_record.idempotency_key)
            if held is not None and not held.is_expired and not _lock_expired(held):
                raise IdempotencyItemAlreadyExistsError(old_data_record=held)
            self._records[data_record.idempotency_key] = data_record

    def _update_record(self, data_record: DataRecord) -> None:
        with self._lock:
            self._records[data_record.idempotency_key] = data_record

    def _delete_record(self, data_record: DataRecord) -> None:
        with self._lock:
            self._records.pop(data_record.idempotency_key, None)


def _lock_expired(record: DataRecord) -> bool:
    return (record.status == STATUS_CONSTANTS["INPROGRESS"] and record.in_progress_expiry_timestamp is not None
            and record.in_progress_expiry_timestamp < int(time.time() * 1000))
