"""The bench's side of the local stack: it starts, resumes and approves runs through the API as
the CLI would, and watches them by listing runs by status (one index query per status and page),
not by reading each run it waits for, so watching 50 runs costs the stack little.

The bench and the stack share one process (and its GIL), so watching competes with the work it
watches. It therefore looks only a few times a second, and takes the time a run got somewhere
from the ledger (the run's `updated_at`, written with the change), not from when it looked.

Everything the bench sends only to watch or to read results is sent under
`RequestCounter.excluded()`; starting, resuming and approving are the run's own requests."""
from __future__ import annotations

import contextlib
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from agentledger.adapters.stepfunctions import execution_arn
from agentledger.local.principals import principal_arn
from agentledger.service import run_id_for

from .report import progress

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping
    from pathlib import Path

    from agentledger.local.runtime import LocalRuntime

    from .request_counter import RequestCounter

RUNNING = "running"
AWAITING_REVIEW = "awaiting_review"
NEEDS_PERSON = "needs_person"
COMPLETE = "complete"
WAITING_ON_A_PERSON = (AWAITING_REVIEW, NEEDS_PERSON)
ENDED = (COMPLETE, NEEDS_PERSON)
POLL_INTERVAL_S = 0.25
PROGRESS_EVERY_S = 60.0  # a line on stderr while waiting for many runs, so a long phase shows it is moving
PAGE = 100
# POST /runs answers 409 while a request with the same Idempotency-Key is still being served (a
# retry of it got there first) and asks to be retried shortly: the bench does, as a client should.
IN_PROGRESS = "still in progress"
START_RETRY_S = 1.0
START_RETRIES = 30


class ApiError(RuntimeError):
    """The API answered a request of the run's with a status it should not have."""


def seconds_until(run: Mapping[str, Any], since: float) -> float:
    """From `since` (a `time.time()`) to the listed run's last change, as the ledger recorded it."""
    return datetime.fromisoformat(run["updated_at"]).timestamp() - since


def handoff_reason(view: Mapping[str, Any], with_message: bool = True) -> str | None:
    """Why the viewed run was handed to a person: the stage, the error and (if asked) its message."""
    handoff = view.get("handoff")
    if view["run"]["status"] != NEEDS_PERSON or not handoff:
        return None
    details = handoff["details"]  # the handoff decision's details: what was attempted, what came back
    stage = details["attempted"].get("stage") or details["kind"]
    reason = f"{stage}: {details['response']['error']}"
    return f"{reason}: {details['response']['message'][:160]}" if with_message else reason


def build_seconds(view: Mapping[str, Any], execution: str | None = None) -> float:
    """How long the viewed run's test builds (those of `execution`, if named) took in all."""
    return sum(build_durations(view, execution))


def build_durations(view: Mapping[str, Any], execution: str | None = None) -> list[float]:
    """How long each of the viewed run's ended test builds (those of `execution`, if named) took,
    from its start to its results in the ledger."""
    return [_seconds_between(build["created_at"], build["finished_at"]) for build in view["test_runs"].values()
            if build.get("finished_at") and execution in (None, build.get("execution"))]


def _seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


@dataclass(frozen=True)
class FullRun:
    run_id: str
    status: str  # complete, or needs_person if it was handed to a person on the way
    execution: str
    to_review_s: float
    end_to_end_s: float


class BenchClient:
    def __init__(self, runtime: LocalRuntime, requests: RequestCounter) -> None:
        self.runtime = runtime
        self.requests = requests
        self.start_retries = 0  # POST /runs sent again after a 409 "still in progress"
        self._retries_lock = threading.Lock()  # runs are started from many threads at once

    # -- the run's own requests ---------------------------------------------------------------
    def start(self, repository: Path, crash: str | None = None) -> str:
        key = str(uuid.uuid4())
        if crash:
            self.runtime.crashes.arm(run_id_for(key, principal_arn("requester")), crash)
        for _ in range(START_RETRIES):
            response = self.runtime.call_api("POST", "/runs", body={"repository": str(repository), "request": "bench"},
                                             caller=principal_arn("requester"), headers={"Idempotency-Key": key})
            if response.status != HTTPStatus.CONFLICT or IN_PROGRESS not in response.body:
                break
            with self._retries_lock:
                self.start_retries += 1
            time.sleep(START_RETRY_S)
        # 200 is the same run again: the key's first request created it.
        if response.status not in (HTTPStatus.CREATED, HTTPStatus.OK):
            raise ApiError(f"POST /runs answered {response.status}: {response.body[:300]}")
        return response.json()["run_id"]

    def resume(self, run_id: str) -> str:
        """The name of the execution the resume started."""
        response = self.runtime.call_api("POST", f"/runs/{run_id}/resume", caller=principal_arn("operator"))
        if response.status != 200:
            raise ApiError(f"resume of {run_id} answered {response.status}: {response.body[:300]}")
        return response.json()["execution"]

    def approve(self, run: Mapping[str, Any]) -> None:
        """Approve the plan the listed run record names, as its reviewer."""
        response = self.runtime.call_api("POST", f"/runs/{run['run_id']}/review",
                                         body={"decision": "approve", "plan_digest": run["plan_digest"]},
                                         caller=principal_arn("reviewer"))
        if response.status != 200:
            raise ApiError(f"approval of {run['run_id']} answered {response.status}: {response.body[:300]}")

    def full_run(self, repository: Path, timeout_s: float) -> FullRun:
        started = time.time()
        return self.follow(self.start(repository), started, timeout_s)

    def follow(self, run_id: str, started: float, timeout_s: float) -> FullRun:
        """Approve the run as soon as it asks and wait for its execution to end; its times count
        from `started` (a `time.time()`)."""
        run = self.wait_for_one(run_id, WAITING_ON_A_PERSON, timeout_s)
        to_review_s = seconds_until(run, started)
        if run["status"] == AWAITING_REVIEW:
            self.approve(run)
            run = self.wait_for_one(run_id, ENDED, timeout_s)
        self.wait_for_execution(run["active_execution"], timeout_s)
        return FullRun(run_id, run["status"], run["active_execution"], to_review_s, seconds_until(run, started))

    # -- watching (not counted) ---------------------------------------------------------------
    def view(self, run_id: str) -> dict[str, Any]:
        with self.requests.excluded():
            return self.runtime.call_api("GET", f"/runs/{run_id}").json()

    def execution_history(self, name: str) -> list[dict[str, Any]]:
        with self.requests.excluded():
            return self.runtime.execution_history(name)

    def stop_execution(self, name: str) -> None:
        """Stop a run's execution that outlived its measurement, so it does not weigh on what follows."""
        # moto 5.2.5 raises AttributeError for an execution whose worker is not running: nothing to stop.
        with self.requests.excluded(), contextlib.suppress(AttributeError):
            self.runtime.client("stepfunctions").stop_execution(
                executionArn=execution_arn(self.runtime.state_machine_arn, name), cause="bench: measurement over")

    def wait_for_execution(self, name: str, timeout_s: float) -> str:
        with self.requests.excluded():
            return self.runtime.wait_for_execution(name, timeout_s=timeout_s)

    def wait_for(self, runs: Mapping[str, str | None], statuses: Collection[str], timeout_s: float,
                 poll_s: float = POLL_INTERVAL_S) -> dict[str, dict[str, Any]]:
        """Wait until every run is listed under one of `statuses`, by the execution named for it
        (None: any execution), or until the deadline; the run records of those that got there."""
        deadline = time.monotonic() + timeout_s
        reported = time.monotonic()
        arrived: dict[str, dict[str, Any]] = {}
        while True:
            for run in self.listed(statuses):
                run_id = run["run_id"]
                if run_id in runs and run_id not in arrived and runs[run_id] in (None, run["active_execution"]):
                    arrived[run_id] = run
            if len(arrived) == len(runs) or time.monotonic() > deadline:
                return arrived
            if len(runs) > 1 and time.monotonic() - reported >= PROGRESS_EVERY_S:
                reported = time.monotonic()
                progress(f"  {len(arrived)} of {len(runs)} runs {' or '.join(statuses)}; "
                         f"{deadline - reported:.0f}s left")
            time.sleep(poll_s)

    def wait_for_one(self, run_id: str, statuses: Collection[str], timeout_s: float,
                     execution: str | None = None) -> dict[str, Any]:
        arrived = self.wait_for({run_id: execution}, statuses, timeout_s)
        if run_id not in arrived:
            raise TimeoutError(f"run {run_id} is not {' or '.join(statuses)} after {timeout_s:.0f} s")
        return arrived[run_id]

    def listed(self, statuses: Iterable[str]) -> list[dict[str, Any]]:
        """Every run listed under one of `statuses`."""
        runs: list[dict[str, Any]] = []
        with self.requests.excluded():
            for status in statuses:
                cursor: str | None = None
                while True:
                    query = {"status": status, "limit": str(PAGE), **({"cursor": cursor} if cursor else {})}
                    response = self.runtime.call_api("GET", "/runs", query=query)
                    if response.status != HTTPStatus.OK:
                        raise ApiError(f"GET /runs?status={status} answered {response.status}: {response.body[:300]}")
                    page = response.json()
                    runs.extend(page["runs"])
                    cursor = page.get("next_cursor")
                    if not cursor:
                        break
        return runs

