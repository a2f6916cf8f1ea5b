"""(d) Inspect and a full run on generated repositories of growing size: time and memory.

Each size is one full run (start, review approved at once, complete) on a repository from
tests/bench/generated_repository.py. Times: POST /runs (the API reads the tree to pin its
revision), the inspect, plan and verify invocations as Step Functions saw them, and start to
review and to complete as the ledger recorded them. Memory is this process's resident set, which
holds every function the local stack runs: the kernel's high-water mark is reset before each run
(/proc/self/clear_refs), so `peak` is the most the run needed on top of what was resident, and
`held after` is what it left resident once it ended."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.resident_memory import memory_mib, reset_peak

from .client import BenchClient, build_seconds, handoff_reason
from .generated_repository import write_repository
from .report import Table, Target, progress
from .timeline import timeline

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT_S = 900


@dataclass(frozen=True)
class Measured:
    files: int
    run_id: str
    status: str
    start_s: float
    inspect_s: float
    plan_s: float
    verify_s: float
    build_s: float  # the test builds, from their start to their results in the ledger
    to_review_s: float
    end_to_end_s: float
    resident_before_mib: float | None
    peak_mib: float | None
    held_after_mib: float | None
    handoff: str | None  # why the run was handed to a person, if it was


def measure(client: BenchClient, root: Path, sizes: tuple[int, ...]) -> list[Measured]:
    measured = []
    for files in sizes:
        repository = write_repository(root / f"orchard-{files}", files)
        progress(f"  {files} files: generated, running")
        before = reset_peak()
        started = time.time()
        run_id = client.start(repository)
        start_s = time.time() - started
        run = client.follow(run_id, started, TIMEOUT_S)
        peak, after = memory_mib("VmHWM"), memory_mib("VmRSS")
        view = client.view(run_id)
        invocations = timeline(client.execution_history(run.execution))
        seconds = {stage: sum(invocation.seconds for invocation in invocations.invocations_of(stage))
                   for stage in ("inspect", "plan", "verify")}
        measured.append(Measured(
            files=files, run_id=run_id, status=run.status, start_s=start_s, inspect_s=seconds["inspect"],
            plan_s=seconds["plan"], verify_s=seconds["verify"], build_s=build_seconds(view),
            to_review_s=run.to_review_s, end_to_end_s=run.end_to_end_s, resident_before_mib=before,
            peak_mib=_above(peak, before), held_after_mib=_above(after, before), handoff=handoff_reason(view)))
        progress(f"  {files} files: {run.status} in {run.end_to_end_s:.1f}s")
    return measured


def goals(largest: int, inspect_target_s: float) -> tuple[str, str]:
    """The run end to end, and inspect within its time, at the largest size."""
    return f"{largest:,} files end to end", f"inspect of {largest:,} files <= {inspect_target_s:g} s"


def table(measured: list[Measured], largest: int, inspect_target_s: float) -> Table:
    result = Table("(d) A full run on generated repositories (one run per size, review approved at once)",
                   ["files", "POST /runs (s)", "inspect (s)", "plan (s)", "verify (s)", "test build (s)",
                    "to review (s)", "end to end (s)", "resident before (MiB)", "peak (MiB)", "held after (MiB)",
                    "status"])
    for row in measured:
        result.add(f"{row.files:,}", row.start_s, row.inspect_s, row.plan_s, row.verify_s, row.build_s, row.to_review_s,
                   row.end_to_end_s, row.resident_before_mib, row.peak_mib, row.held_after_mib, row.status)
    end_to_end, inspect = goals(largest, inspect_target_s)
    at_largest = next((row for row in measured if row.files == largest), None)
    if at_largest is None:
        result.target("-", Target(end_to_end, None))
        result.target("-", Target(inspect, None))
    else:
        result.target(at_largest.status, Target(end_to_end, at_largest.status == "complete"))
        result.target(f"{at_largest.inspect_s:.2f} s", Target(inspect, 0 < at_largest.inspect_s <= inspect_target_s))
        if at_largest.inspect_s > inspect_target_s:
            result.notes.append(f"inspect missed because: it parses each of the {largest:,} files' Python modules and "
                                "reads their docstring examples on a first run (a second run of the same tree "
                                "parses only what changed)")
    result.notes.extend(f"{row.files:,} files handed to a person at {row.handoff}" for row in measured if row.handoff)
    result.notes.append("peak and held after are on top of the resident set before the run; verify is its "
                        "invocations' time, not the build's (the Wait states between polls are not in it)")
    return result


def _above(value: float | None, base: float | None) -> float | None:
    return None if value is None or base is None else value - base
