"""In-memory adapters of agentledger.ports: the same semantics as the AWS adapters (versioned,
all-or-nothing ledger writes; content-addressed, integrity-checked artifacts; start-once
executions), held in dictionaries behind a lock."""
from __future__ import annotations

import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentledger.artifacts import ContentAddressedArtifacts, run_prefix
from agentledger.errors import (
    ConcurrentModificationError,
    RunAlreadyExistsError,
    RunNotFoundError,
)
from agentledger.records import RUN_SK, created_transition, read_ledger, read_run, run_pk, stored_item
from agentledger.source import SourceSnapshot, directory_revision, snapshot_directory
from agentledger.transitions import next_version

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentledger.models import Decision, Ledger, Record, Run, RunState, RunStatus, Stage
    from agentledger.ports import BuildWait


class InMemoryLedger:
    """Each run's items as the table holds them, read back through the same upgrade."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, dict[str, dict[str, Any]]] = {}  # pk -> sk -> stored item

    def get_run(self, run_id: str) -> Run:
        with self._lock:
            item = self._items.get(run_pk(run_id), {}).get(RUN_SK)
        if item is None:
            raise RunNotFoundError(f"no run with id {run_id!r}")
        return read_run(item)

    def load(self, run_id: str) -> Ledger:
        return read_ledger(run_id, self.items(run_id))

    def items(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items.get(run_pk(run_id), {}).values())

    def put_items(self, items: list[dict[str, Any]]) -> None:
        """Stored items as a restore of the table puts them: written by whichever release."""
        with self._lock:
            for item in items:
                self._items.setdefault(item["pk"], {})[item["sk"]] = item

    def list_runs(self, status: RunStatus | None = None, limit: int = 20,
                  cursor: str | None = None) -> tuple[list[Run], str | None]:
        with self._lock:
            stored = [items[RUN_SK] for items in self._items.values() if RUN_SK in items]
        runs = sorted((r for r in map(read_run, stored) if status is None or r.status == status),
                      key=lambda r: (r.created_at, r.run_id), reverse=True)
        start = int(cursor or 0)
        page = runs[start:start + limit]
        return page, str(start + limit) if start + limit < len(runs) else None

    def create_run(self, run: Run, decision: Decision) -> Run:
        with self._lock:
            if run_pk(run.run_id) in self._items:
                raise RunAlreadyExistsError(f"run {run.run_id} already exists")
            self._items[run_pk(run.run_id)] = _keyed(run.run_id, [run, created_transition(), decision])
        return run

    def write(self, run: Run, *, reason: str, execution: str | None = None, to_state: RunState | None = None,
              status: RunStatus | None = None, changes: dict[str, Any] | None = None,
              records: Sequence[Record] = ()) -> Run:
        updated, records = next_version(run, reason=reason, execution=execution, to_state=to_state, status=status,
                                        changes=changes, records=list(records))
        with self._lock:
            items = self._items[run_pk(run.run_id)]
            if items[RUN_SK]["version"] != run.version:
                raise ConcurrentModificationError(f"run {run.run_id} changed since version {run.version} was read")
            items.update(_keyed(run.run_id, [updated, *records]))
        return updated

    def append(self, run_id: str, record: Record) -> None:
        with self._lock:
            self._items[run_pk(run_id)].update(_keyed(run_id, [record]))


def _keyed(run_id: str, records: list[Record]) -> dict[str, dict[str, Any]]:
    items = (stored_item(run_id, record) for record in records)
    return {item["sk"]: item for item in items}


class InMemoryArtifacts(ContentAddressedArtifacts):
    def __init__(self, bucket: str = "memory-bucket") -> None:
        super().__init__()
        self.bucket = bucket
        self.objects: dict[str, bytes] = {}

    def location(self, run_id: str) -> str:
        return f"memory://{self.bucket}/{run_prefix(run_id)}"

    def _store(self, key: str, data: bytes, media_type: str, metadata: dict[str, str]) -> None:
        self.objects[key] = data

    def _load(self, key: str) -> bytes:
        return self.objects[key]

    def download_url(self, key: str, expires_s: int) -> str:
        return f"memory://{self.bucket}/{key}"

    def upload_grant(self, key: str, max_bytes: int, expires_s: int, min_bytes: int = 1) -> dict[str, Any]:
        return {"url": f"memory://{self.bucket}", "fields": {"key": key}, "max_bytes": max_bytes}

    def read(self, key: str) -> bytes | None:
        return self.objects.get(key)

    def has_repository(self, url: str) -> bool:
        bucket, _, key = url.removeprefix("s3://").partition("/")
        return bucket == self.bucket and key in self.objects

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(key for key in self.objects if key.startswith(prefix))


@dataclass
class RecordingExecutions:
    """Starts each named execution once and records every answer to a task token."""

    started: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, str] = field(default_factory=dict)
    answers: list[tuple[str, str, Any]] = field(default_factory=list)
    live_tokens: set[str] | None = None  # None: every token is live

    def start(self, name: str, run_id: str) -> str:
        self.started[name] += 1
        self.statuses.setdefault(name, "RUNNING")
        return f"arn:memory:execution:{name}"

    def status(self, name: str) -> str | None:
        return self.statuses.get(name)

    def _answer(self, kind: str, token: str, detail: Any) -> bool:
        self.answers.append((kind, token, detail))
        return self.live_tokens is None or token in self.live_tokens

    def succeed_task(self, task_token: str, output: dict[str, Any]) -> bool:
        return self._answer("success", task_token, output)

    def fail_task(self, task_token: str, error: str, cause: str) -> bool:
        return self._answer("failure", task_token, error)

    def heartbeat(self, task_token: str) -> bool:
        return self._answer("heartbeat", task_token, None)

    def stop(self, name: str, cause: str) -> bool:
        if name not in self.statuses:
            return False
        if self.statuses[name] == "RUNNING":
            self.statuses[name] = "ABORTED"
        return True

    def answered(self, kind: str) -> list[tuple[str, str, Any]]:
        return [answer for answer in self.answers if answer[0] == kind]


class DirectorySources:
    """Local paths only, hashed as the real resolver hashes them."""

    def snapshot(self, repository: str) -> SourceSnapshot:
        return snapshot_directory(Path(repository))

    def revision(self, repository: str) -> str:
        if not Path(repository).is_dir():
            raise FileNotFoundError(f"{repository} is not a directory")
        return directory_revision(repository)


@dataclass
class RecordingMetrics:
    counts: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    timings: list[tuple[str, float, str | None]] = field(default_factory=list)

    def count(self, name: str, value: float = 1) -> None:
        self.counts[name] += value

    def seconds(self, name: str, value: float, stage: str | None = None) -> None:
        self.timings.append((name, value, stage))


class InMemoryBuildWaits:
    """The build wait table's semantics: one parking per run, stage and build (a newer replaces
    it), taken once, the room waits read oldest first."""

    def __init__(self) -> None:
        self.parked: dict[tuple[str | None, str, str, Stage], BuildWait] = {}
        self.last_end: str | None = None
        self._lock = threading.Lock()

    def mark_build_ended(self, at: str) -> None:
        with self._lock:
            self.last_end = max(self.last_end or at, at)

    def last_build_ended(self) -> str | None:
        return self.last_end

    @staticmethod
    def _key(wait: BuildWait) -> tuple[str | None, str, str, Stage]:
        return wait.build_id, wait.queued_at, wait.run_id, wait.stage

    def park(self, wait: BuildWait, expires_in_s: int) -> None:
        with self._lock:
            self.parked[self._key(wait)] = wait

    def take(self, wait: BuildWait) -> bool:
        with self._lock:
            if self.parked.get(self._key(wait)) != wait:
                return False
            del self.parked[self._key(wait)]
            return True

    def waiting_for(self, build_id: str) -> list[BuildWait]:
        with self._lock:
            return [wait for key, wait in sorted(self.parked.items(), key=_order) if key[0] == build_id]

    def waiting_for_room(self, limit: int) -> list[BuildWait]:
        with self._lock:
            return [wait for key, wait in sorted(self.parked.items(), key=_order) if key[0] is None][:limit]


def _order(item: tuple[tuple[str | None, str, str, Stage], BuildWait]) -> tuple[str, str, str]:
    _, queued_at, run_id, stage = item[0]
    return queued_at, run_id, stage.value
