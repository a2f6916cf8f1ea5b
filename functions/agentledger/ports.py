"""The ports the orchestration (Workflow, RunService, EffectRunner) depends on. The AWS adapters
(DynamoDB ledger, S3 artifacts, Step Functions executions, GitHub and SNS receivers) implement
them; in-memory fakes under tests/fakes implement them for unit tests that need no moto."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .models import (
        ArtifactRef,
        BuildRequest,
        Decision,
        Ledger,
        Record,
        Run,
        RunState,
        RunStatus,
        Stage,
    )
    from .source import SourceSnapshot
    from .states import BuildStatus


class LedgerPort(Protocol):
    def get_run(self, run_id: str) -> Run: ...

    def load(self, run_id: str) -> Ledger: ...

    def list_runs(self, status: RunStatus | None = None, limit: int = 20,
                  cursor: str | None = None) -> tuple[list[Run], str | None]: ...

    def create_run(self, run: Run, decision: Decision) -> Run:
        """Raises RunAlreadyExistsError when the run id is taken."""

    def write(self, run: Run, *, reason: str, execution: str | None = None, to_state: RunState | None = None,
              status: RunStatus | None = None, changes: dict[str, Any] | None = None,
              records: Sequence[Record] = ()) -> Run:
        """All or nothing, only if the run is still at `run.version` (else ConcurrentModificationError);
        a state change must be allowed by the transition table."""

    def append(self, run_id: str, record: Record) -> None: ...


class ArtifactPort(Protocol):
    bucket: str

    def location(self, run_id: str) -> str: ...

    def put(self, run_id: str, stage: Stage, name: str, data: bytes, media_type: str) -> ArtifactRef: ...

    def put_json(self, run_id: str, stage: Stage, name: str, document: Any) -> ArtifactRef: ...

    def put_text(self, run_id: str, stage: Stage, name: str, text: str,
                 media_type: str = "text/plain") -> ArtifactRef: ...

    def get(self, ref: ArtifactRef) -> bytes:
        """Raises ArtifactIntegrityError when the bytes do not hash to `ref.sha256`."""

    def get_json(self, ref: ArtifactRef) -> Any: ...

    def read_manifest(self, ref: ArtifactRef) -> dict[str, str] | None:
        """A file manifest (path -> sha256); None when it is gone or does not match its hash."""

    def presigned_url(self, ref: ArtifactRef, expires_s: int) -> str: ...

    def download_url(self, key: str, expires_s: int) -> str:
        """A presigned GET of one object: what a test build reads its inputs through."""

    def upload_grant(self, key: str, max_bytes: int, expires_s: int, min_bytes: int = 1) -> dict[str, Any]:
        """A presigned POST ({url, fields}) that can write only `key`, at most `max_bytes`."""

    def read(self, key: str) -> bytes | None:
        """An object that is not content-addressed (a build's upload); None when absent."""

    def has_repository(self, url: str) -> bool:
        """Whether an uploaded repository tarball is at s3://bucket/key."""

    def list_keys(self, prefix: str) -> list[str]: ...


class ExecutionPort(Protocol):
    def start(self, name: str, run_id: str) -> str:
        """Start the named execution once; a repeated call gets the execution the first started."""

    def status(self, name: str) -> str | None: ...

    def succeed_task(self, task_token: str, output: dict[str, Any]) -> bool:
        """False when the task is already over."""

    def fail_task(self, task_token: str, error: str, cause: str) -> bool: ...

    def heartbeat(self, task_token: str) -> bool: ...

    def stop(self, name: str, cause: str) -> bool:
        """Stop the named execution (one already over stays as it ended); False when there is no such execution."""


class BuildStatusPort(Protocol):
    def status(self, build_id: str) -> BuildStatus | None:
        """None when no such build is known."""


@dataclass(frozen=True)
class BuildLook:
    """A build as the build service describes it: its status and, once it ended other than
    SUCCEEDED, why (the phase that failed and its reason; None when it says nothing)."""

    status: BuildStatus
    failure: str | None = None


class BuildPort(Protocol):
    """Test builds in a sandbox: CodeBuild on AWS, the local runtime's subprocess sandbox locally."""

    def start(self, request: BuildRequest) -> str | None:
        """Start a build; its id, or None when the build service takes no more builds for now (at
        CodeBuild's concurrent-build limit, its queue full): nothing started, start it again later."""

    def find(self, test_run: str) -> str | None:
        """The id of a build already started for `test_run` ("<run id>/<input digest>"), if any."""

    def look(self, build_id: str) -> BuildLook | None:
        """How the build stands, from one description of it; None when no such build is known."""


@dataclass(frozen=True)
class BuildWait:
    """A stage's state-machine task parked until its build ends (`build_id`), or, when the build
    service had no room to start it (`build_id` None), until another build ends and frees some.
    `queued_at` is when the build was asked for: room goes to the longest waiting first."""

    run_id: str
    stage: Stage
    task_token: str
    queued_at: str
    build_id: str | None = None


class BuildWaitPort(Protocol):
    """The parked build waits (a DynamoDB table on AWS): one per run, stage and build, the
    latest parking of each replacing the one before."""

    def park(self, wait: BuildWait, expires_in_s: int) -> None: ...

    def take(self, wait: BuildWait) -> bool:
        """Remove this parking; False when another caller took it first (or a newer one replaced it)."""

    def waiting_for(self, build_id: str) -> list[BuildWait]: ...

    def waiting_for_room(self, limit: int) -> list[BuildWait]:
        """The oldest waits for room, longest waiting first."""

    def mark_build_ended(self, at: str) -> None:
        """A build of the project ended at `at` (ISO time): the queue for room moves."""

    def last_build_ended(self) -> str | None: ...


class SourcePort(Protocol):
    def snapshot(self, repository: str) -> SourceSnapshot: ...

    def revision(self, repository: str) -> str:
        """What `snapshot(repository).revision` would be, without hashing the tree where avoidable."""


class MetricSink(Protocol):
    def count(self, name: str, value: float = 1) -> None: ...

    def seconds(self, name: str, value: float, stage: str | None = None) -> None: ...


# -- receivers: the systems an effect writes to ----------------------------------------------
# Errors say what is known about the write: `ReceiverUnavailableError`, it was not sent;
# `ReceiverErrorResponse`, the receiver answered with an error; `ReceiverNoResponseError`, it was
# sent and nothing came back, so it may or may not be there; `ReceiverRejectedError`, refused for
# a reason a retry will not fix; `ReceiverRateLimitedError`, it answered that the caller is over a
# rate limit and did not take the write: send it again once the wait it names has passed.

@dataclass(frozen=True)
class Confirmation:
    receiver_id: str
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


class ReceiverError(Exception):
    def __init__(self, message: str, response: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.response = response or {}


class ReceiverUnavailableError(ReceiverError):
    pass


class ReceiverErrorResponse(ReceiverError):
    pass


class ReceiverRateLimitedError(ReceiverErrorResponse):
    """`retry_after_s`: how long the receiver asked to wait; None when it named no time. `paced`:
    not sent at all, held back by the write budget (pacing.py) before it could meet the limit."""

    def __init__(self, message: str, response: dict[str, Any] | None = None,
                 retry_after_s: float | None = None, paced: bool = False) -> None:
        super().__init__(message, response)
        self.retry_after_s = retry_after_s
        self.paced = paced


class WriteBudgetPort(Protocol):
    def take(self, requests: int) -> float:
        """Take `requests` from the budget: 0 when taken, else the seconds until it has room (nothing taken)."""


class ReceiverNoResponseError(ReceiverError):
    pass


class ReceiverRejectedError(ReceiverError):
    pass


class Receiver(Protocol):
    name: str

    def find(self, key: str) -> list[Confirmation]:
        """Every record at the receiver that carries `key` (empty when it cannot be searched)."""

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation: ...

    def read_back(self, confirmation: Confirmation, key: str) -> Confirmation:
        """The receiver's own account of the write, checked to carry `key`."""
