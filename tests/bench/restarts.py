"""(a) What a restart costs against starting over, with a slow test suite.

The sample repository gets a module whose doctest sleeps for the suite's duration, so the test
build the run starts takes that long, as real suites do. Measured: the wall time to review for a
fresh run; for a resume after the process died right after verification committed (the ledger
says the tests already ran, so nothing is redone); and for a resume after a source change while
the run was stopped (the plan read the changed file: everything from inspect is redone). The runs
to resume are crashed all at once beforehand, since only their resumes are timed."""
from __future__ import annotations

import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from tests.samples import edit_sample_repository, write_sample_repository

from .client import WAITING_ON_A_PERSON, BenchClient, build_seconds, seconds_until
from .report import Table, Target, progress, ratio

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

SLOW_MODULE = '''"""Something slow to test."""
import time


def settle(seconds):
    """Wait, then report.

    >>> settle({seconds})
    'settled'
    """
    time.sleep(seconds)
    return "settled"
'''
CRASH_AFTER_VERIFY = "verify:after_commit"
TIMEOUT_S = 300  # one run: its test writer's build runs the slow suite about 7 times (~140 s here)
# The runs to resume, crashed together: 6 such builds share 2 cores (they timed out at 300 s).
CRASHED_TIMEOUT_S = 1200


@dataclass(frozen=True)
class Scenario:
    name: str
    seconds: float  # median wall time to review
    stages_run: int  # stages the measured execution ran (most over the repeats)
    build_s: float  # median time of the test builds the measured execution ran
    status: str  # awaiting_review if every repeat got there, else where one stopped instead


class Reached(NamedTuple):
    """A measured scenario's run at review: how long it took, and which execution got it there."""
    seconds: float
    run_id: str
    execution: str


class Restarts:
    def __init__(self, client: BenchClient, root: Path, suite_s: float) -> None:
        self.client = client
        self.root = root
        self.suite_s = suite_s

    def repository(self) -> Path:
        repository = write_sample_repository(self.root / f"slow-{uuid.uuid4().hex[:8]}")
        (repository / "textkit" / "slow.py").write_text(SLOW_MODULE.replace("{seconds}", repr(self.suite_s)))
        return repository

    def fresh(self) -> Reached:
        started = time.time()
        run_id = self.client.start(self.repository())
        run = self.client.wait_for_one(run_id, WAITING_ON_A_PERSON, TIMEOUT_S)
        return Reached(seconds_until(run, started), run_id, run["active_execution"])

    def crashed_runs(self, count: int) -> list[tuple[str, Path]]:
        """`count` runs whose process died right after verify committed, now with a person: (run, repository)."""
        repositories = [self.repository() for _ in range(count)]
        with ThreadPoolExecutor(max_workers=count) as starting:
            run_ids = list(starting.map(lambda repository: self.client.start(repository, crash=CRASH_AFTER_VERIFY),
                                        repositories))
        stopped = self.client.wait_for(dict.fromkeys(run_ids), WAITING_ON_A_PERSON, CRASHED_TIMEOUT_S)
        if len(stopped) < count:
            raise TimeoutError(f"{count - len(stopped)} of the runs to resume did not stop in {CRASHED_TIMEOUT_S} s")
        return list(zip(run_ids, repositories, strict=False))

    def resume(self, run_id: str, repository: Path, change_source: bool) -> Reached:
        if change_source:
            edit_sample_repository(repository)
        started = time.time()
        execution = self.client.resume(run_id)
        run = self.client.wait_for_one(run_id, WAITING_ON_A_PERSON, TIMEOUT_S, execution=execution)
        return Reached(seconds_until(run, started), run_id, execution)


def measure(client: BenchClient, root: Path, suite_s: float, repeats: int) -> list[Scenario]:
    restarts = Restarts(client, root, suite_s)
    progress(f"  crashing {2 * repeats} runs after verify, to resume")
    crashed = iter(restarts.crashed_runs(2 * repeats))
    scenarios: list[tuple[str, Callable[[], Reached]]] = [
        ("fresh run to review", restarts.fresh),
        ("resume after a crash after verify", lambda: restarts.resume(*next(crashed), change_source=False)),
        ("resume after a source change", lambda: restarts.resume(*next(crashed), change_source=True)),
    ]
    measured = []
    for name, scenario in scenarios:
        timings, stages, builds, statuses = [], [], [], []
        for repeat in range(repeats):
            seconds, run_id, execution = scenario()
            view = client.view(run_id)
            timings.append(seconds)
            builds.append(build_seconds(view, execution))
            stages.append(sum(1 for record in view["stages"].values() if record.get("execution") == execution))
            statuses.append(view["run"]["status"])
            progress(f"  {name} ({repeat + 1}/{repeats}): {seconds:.2f}s, {statuses[-1]}")
        # One repeat handed to a person is the scenario's finding, whatever the others did.
        worst = next((status for status in statuses if status != "awaiting_review"), "awaiting_review")
        measured.append(Scenario(name, statistics.median(timings), max(stages), statistics.median(builds), worst))
    return measured


def goal(resume_target: float) -> str:
    return f"resume after verify <= {resume_target}x a fresh run"


def table(scenarios: list[Scenario], suite_s: float, repeats: int, resume_target: float) -> Table:
    fresh = scenarios[0]
    result = Table(f"(a) Restart against starting over (a {suite_s:g} s test suite; median of {repeats})",
                   ["scenario", "to review (s)", "stages run", "test build (s)", "vs fresh", "stopped at"])
    for scenario in scenarios:
        result.add(scenario.name, scenario.seconds, scenario.stages_run, scenario.build_s,
                   ratio(scenario.seconds, fresh.seconds), scenario.status)
    after_verify = scenarios[1]
    stopped_short = next((scenario for scenario in (fresh, after_verify) if scenario.status != "awaiting_review"), None)
    result.target(f"{stopped_short.name}: {stopped_short.status}" if stopped_short else
                  ratio(after_verify.seconds, fresh.seconds),
                  Target(goal(resume_target),
                         stopped_short is None and after_verify.seconds <= resume_target * fresh.seconds))
    if stopped_short is None and after_verify.seconds > resume_target * fresh.seconds:
        result.notes.append(
            f"missed because: the resume ran {after_verify.stages_run} stage(s) (the assessment, review's request) in "
            f"{after_verify.seconds:.3f} s, against {resume_target * fresh.seconds:.3f} s allowed: with the suite "
            f"skipped, what is left is the workflow's own work per stage, (c)'s working time")
    return result
