"""Following a run as it goes: the stage lines `run --wait`, `resume --wait` and `demo` print
while they wait, and the error a wait that gives up raises."""
from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentledger.states import RunStatus

from . import render
from .exit_codes import ExitCode

if TYPE_CHECKING:
    from .client import ApiClient

# A follower looks again soon after something changed, then less often while nothing does: on AWS
# each look is an API call that reads the whole ledger and checks its evidence against the source,
# and a follow may last the half hour a slow suite takes.
POLL_INTERVAL_S = 0.3
POLL_INTERVAL_MAX_S = 2.0
POLL_BACKOFF = 1.5
CLEAR_LINE = "\r\x1b[K"
# Statuses in which a run waits for someone (or is done): following it any longer shows nothing new.
SETTLED = frozenset({RunStatus.AWAITING_REVIEW, RunStatus.COMPLETE, RunStatus.NEEDS_PERSON, RunStatus.CANCELLED})

StageMarks = dict[str, tuple[Any, ...]]


class CliError(Exception):
    """A problem the user can fix, reported as one line."""

    exit_code = ExitCode.USER_ERROR


class StillRunning(CliError):
    exit_code = ExitCode.STILL_RUNNING


def run_path(run_id: str) -> str:
    return f"/runs/{run_id}"


def stage_marks(document: dict[str, Any] | None) -> StageMarks:
    stages = (document or {}).get("stages") or {}
    return {name: (stages[name]["status"], stages[name].get("attempt"), stages[name].get("execution"))
            for name in render.STAGE_ORDER if name in stages}


def follow_run(client: ApiClient, run_id: str, *, timeout_s: float, show_progress: bool,
            already_seen: StageMarks | None = None) -> dict[str, Any]:
    """Poll the run until it settles, printing a stage's line whenever that stage starts, finishes,
    fails or is invalidated. Returns the last run document."""
    seen = dict(already_seen or {})
    deadline = time.monotonic() + timeout_s
    live = show_progress and sys.stdout.isatty()  # a rewritten line only where a person watches
    interval = POLL_INTERVAL_S
    last_step = None
    while True:
        document = client.get(run_path(run_id))
        changed = False
        for name, mark in stage_marks(document).items():
            if seen.get(name) != mark:
                seen[name] = mark
                changed = True
                if show_progress:
                    line = render.stage_progress_line(render.printable_document(document["stages"][name]))
                    print(f"{CLEAR_LINE if live else ''}{line}", flush=True)
        progress = document.get("progress")
        step = render.build_progress_line(progress) if progress else None
        if step is not None and step != last_step:
            last_step, changed = step, True
            if show_progress:  # a line per step, in a log as on a terminal
                print(f"{CLEAR_LINE if live else ''}    {step}", flush=True)
        status = document["run"]["status"]
        if status in SETTLED and not _decided_but_not_yet_moved_on(document):
            if live:
                print(CLEAR_LINE, end="", flush=True)
            return document
        stages = render.printable_document(document["stages"])
        elapsed = render.elapsed_line(stages, datetime.now(UTC), progress) if live else None
        if elapsed:
            print(f"{CLEAR_LINE}{elapsed}", end="", flush=True)
        if time.monotonic() >= deadline:
            raise StillRunning(f"{run_id} is still {status} after {timeout_s:g}s; "
                           f"it goes on without us: follow it with `agentledger show {run_id}`")
        interval = next_poll_interval(interval, changed)
        time.sleep(interval)


def next_poll_interval(interval: float, changed: bool) -> float:
    """Back to the first interval after a change; otherwise longer, up to the longest."""
    return POLL_INTERVAL_S if changed else min(POLL_INTERVAL_MAX_S, interval * POLL_BACKOFF)


def _decided_but_not_yet_moved_on(document: dict[str, Any]) -> bool:
    """A review was answered and the execution has not yet left the review state."""
    review = document.get("review") or {}
    return document["run"]["status"] == RunStatus.AWAITING_REVIEW and bool(review.get("decision"))
