"""(e) Many runs at once: how long until all of them wait for review, how many were handed to a
person instead, and whether the ledger kept each run's transitions whole.

The quota that binds first on AWS is scaled down so it binds here too: the bench's stack allows
few test builds at once (`testBuildConcurrency`), and CodeBuild refuses a build past that limit, as
the local runner does. The runs queue for builds; the table shows how long that made them wait
(p50 and p95 to review), how many starts were refused for want of room, and that no stage of any
run started a second build.

All runs are started at the same moment, one client thread each, on their own copies of the
sample repository. The ledger is then read back run by run through the API. A Transition record
carries the run version at which the state changed; commits that change no state (a stage's
outputs, a build's id) take the versions in between, so the numbers are not consecutive, and a
run's transitions are whole when they form one chain, in version order: each move starting where
the one before ended, the last ending in the run's current state. Where the chain breaks with the
same move again, two workers both made it (doubled), as they do where two records share a version;
where it breaks otherwise, or ends elsewhere than the run, a move is missing (lost)."""
from __future__ import annotations

import math
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.local.metrics import emitted_metrics, summarize

from .client import (
    AWAITING_REVIEW,
    NEEDS_PERSON,
    RUNNING,
    WAITING_ON_A_PERSON,
    ApiError,
    BenchClient,
    handoff_reason,
    seconds_until,
)
from .report import Table, Target, progress

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

TIMEOUT_S = 3600  # from the first POST /runs until every run must wait for review: 400 builds, 2 at a time here
POLL_S = 1.0  # watching 200 runs: a look a second is plenty, and leaves the stack its process
KEEPER_INTERVAL_S = 60.0  # well inside a review's heartbeat
BUILD_STAGES = ("execute", "verify")


@dataclass(frozen=True)
class Measured:
    runs: int
    started_s: float  # until the last POST /runs answered
    refused: Counter[str]  # POST /runs that failed, by answer: those runs never started
    start_retries: int  # POST /runs sent again, as asked, after a 409 "still in progress"
    to_review_s: list[float]  # of each run that reached review in time, from the first start
    handed_to_a_person: int
    lost: int
    doubled: int
    retried_stages: int  # stage attempts beyond the first, over all runs
    handoffs: Counter[str]  # why runs were handed to a person
    build_limit: int | None  # the most test builds the project runs at once
    builds_refused: int  # test build starts CodeBuild refused for want of room
    builds_doubled: int  # a run's stage that started more than one build

    @property
    def all_reached_review(self) -> bool:
        return len(self.to_review_s) == self.runs

    @property
    def still_running(self) -> int:
        return self.runs - sum(self.refused.values()) - len(self.to_review_s) - self.handed_to_a_person


def measure(client: BenchClient, repository: Callable[[], Path], runs: int) -> Measured:
    repositories = [repository() for _ in range(runs)]
    refused_builds_before = _builds_refused(client)
    started = time.time()
    run_ids: list[str] = []
    refused: Counter[str] = Counter()
    retries_before = client.start_retries
    with ThreadPoolExecutor(max_workers=runs) as clients:
        for starting in [clients.submit(client.start, repository) for repository in repositories]:
            try:
                run_ids.append(starting.result())
            except ApiError as error:
                refused[str(error)[:160]] += 1
    started_s = time.time() - started
    progress(f"  {len(run_ids)} of {runs} runs started in {started_s:.1f}s; waiting for review")
    remaining_s = max(0.0, TIMEOUT_S - started_s)
    with _review_keeper(client):
        stopped = client.wait_for(dict.fromkeys(run_ids), WAITING_ON_A_PERSON, remaining_s, poll_s=POLL_S)
    # Runs still going at the deadline are stopped first, so reading the ledger back does not wait
    # behind their work.
    still_going = set(run_ids) - set(stopped)
    for run in client.listed([RUNNING]):
        if run["run_id"] in still_going:
            client.stop_execution(run["active_execution"])
    lost = doubled = retried = 0
    handoffs: Counter[str] = Counter()
    for run_id in run_ids:
        view = client.view(run_id)
        run_lost, run_doubled = transition_faults(view)
        lost, doubled = lost + run_lost, doubled + run_doubled
        retried += sum(max(0, record["attempt"] - 1) for record in view["stages"].values())
        reason = handoff_reason(view, with_message=False)
        if reason:
            handoffs[reason] += 1
    builds = client.runtime.codebuild
    doubled_builds = sum(1 for run_id in run_ids for stage in BUILD_STAGES if len(builds.builds_for(run_id, stage)) > 1)
    return Measured(
        runs=runs, started_s=started_s, refused=refused, start_retries=client.start_retries - retries_before,
        to_review_s=[seconds_until(run, started) for run in stopped.values() if run["status"] == AWAITING_REVIEW],
        handed_to_a_person=sum(1 for run in stopped.values() if run["status"] == NEEDS_PERSON),
        lost=lost, doubled=doubled, retried_stages=retried, handoffs=handoffs,
        build_limit=builds.build_limits.get(client.runtime.output("TestBuildProjectName")),
        builds_refused=_builds_refused(client) - refused_builds_before, builds_doubled=doubled_builds)


@contextmanager
def _review_keeper(client: BenchClient) -> Iterator[None]:
    """The keeper's schedule, as EventBridge runs it on AWS: the runs that reach review first wait
    there for the others, and a review that hears no heartbeat times out."""
    stopping = threading.Event()

    def keep() -> None:
        while not stopping.wait(KEEPER_INTERVAL_S):
            client.runtime.run_review_keeper()

    keeper = threading.Thread(target=keep, name="bench-review-keeper", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stopping.set()
        keeper.join()


def _builds_refused(client: BenchClient) -> int:
    """As `agentledger metrics` counts them: the functions' Throttled records for CodeBuild."""
    return summarize(emitted_metrics(client.runtime))["throttled_by_aws_service"].get("codebuild", 0)


def goal(target_runs: int) -> str:
    return f"{target_runs} concurrent runs: all at review, 0 handed to a person, 0 builds doubled"


def table(measured: Measured, target_runs: int) -> Table:
    result = Table(f"(e) {measured.runs} runs started at once (the sample repository), at most "
                   f"{measured.build_limit} test builds at a time", ["", "measured"])
    result.add("runs started", measured.runs - sum(measured.refused.values()))
    result.add("POST /runs refused", sum(measured.refused.values()))
    result.add("POST /runs retried after a 409 in progress", measured.start_retries)
    result.add("all POST /runs answered after (s)", measured.started_s)
    reached = measured.to_review_s
    result.add("reached review", f"{len(reached)} of {measured.runs}")
    result.add("the last reached review after (s)", max(reached) if measured.all_reached_review else
               f"not all within {TIMEOUT_S} s")
    result.add("to review, p50 (s)", statistics.median(reached) if reached else None)
    result.add("to review, p95 (s)", _percentile(reached, 0.95) if reached else None)
    result.add("test build starts refused for want of room", measured.builds_refused)
    result.add("a run's stage that started two builds", measured.builds_doubled)
    result.add("handed to a person", measured.handed_to_a_person)
    result.add("still running at the deadline (then stopped)", measured.still_running)
    result.add("transitions lost / doubled", f"{measured.lost} / {measured.doubled}")
    result.add("stage attempts beyond the first", measured.retried_stages)
    for reason, count in measured.handoffs.most_common():
        result.notes.append(f"handed to a person: {count} x {reason}")
    for answer, count in measured.refused.most_common():
        result.notes.append(f"not started: {count} x {answer}")
    # Met only if every run got to review: one still running at the deadline was not handed over, but
    # it did not make it either.
    figure = ", ".join([f"{measured.handed_to_a_person} of {measured.runs} handed to a person",
                        *([f"{sum(measured.refused.values())} not started"] if measured.refused else []),
                        *([f"{measured.still_running} still running"] if measured.still_running else [])])
    met = measured.all_reached_review and measured.builds_doubled == 0
    result.target(figure, Target(goal(target_runs), None if measured.runs != target_runs else met))
    result.notes.append("the runs queue for the project's test builds: a stage refused a build parks until a "
                        "build's end offers it room, oldest first, or its own look (after 10 s, backing off to "
                        "300 s) finds room")
    return result


def _percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def transition_faults(view: dict[str, Any]) -> tuple[int, int]:
    """(lost, doubled) transitions in one run's ledger; see the module docstring."""
    transitions = sorted(view["transitions"], key=lambda transition: transition["version"])
    versions = Counter(transition["version"] for transition in transitions)
    doubled = sum(count - 1 for count in versions.values())
    lost = 0
    for before, after in zip(transitions, transitions[1:], strict=False):
        if after["from_state"] == before["to_state"]:
            continue
        if (after["from_state"], after["to_state"]) == (before["from_state"], before["to_state"]):
            doubled += 1
        else:
            lost += 1
    if transitions and transitions[-1]["to_state"] != view["run"]["state"]:
        lost += 1
    return lost, doubled
