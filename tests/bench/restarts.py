"""(a) What a restart costs against starting over, with a slow test suite.

The sample repository gets a module whose doctest sleeps for the suite's duration, so the test
build the run starts takes that long, as real suites do. Measured: the wall time to review for a
fresh run; for a resume after the process died right after verification committed (the ledger
says the tests already ran, so nothing is redone); and for a resume after a source change while
the run was stopped (the plan read the changed file: everything from inspect is redone)."""
from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.samples import edit_sample_repository, write_sample_repository

from .client import WAITING_ON_A_PERSON, BenchClient, seconds_until
from .report import Table, Target, progress, ratio

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
TIMEOUT_S = 300


@dataclass(frozen=True)
class Scenario:
    name: str
    seconds: float  # median wall time to review
    stages_run: int  # stages the measured execution ran (most over the repeats)
    status: str  # awaiting_review if every repeat got there, else where one stopped instead


class Restarts:
    def __init__(self, client: BenchClient, root: Path, suite_s: float) -> None:
        self.client = client
        self.root = root
        self.suite_s = suite_s

    def repository(self) -> Path:
        repository = write_sample_repository(self.root / f"slow-{uuid.uuid4().hex[:8]}")
        (repository / "textkit" / "slow.py").write_text(SLOW_MODULE.replace("{seconds}", repr(self.suite_s)))
        return repository

    def fresh(self) -> tuple[float, str, str]:
        """(seconds to review, the run, the execution measured)"""
        started = time.time()
        run_id = self.client.start(self.repository())
        run = self.client.wait_for_one(run_id, WAITING_ON_A_PERSON, TIMEOUT_S)
        return seconds_until(run, started), run_id, run["active_execution"]

    def resume_after_crash(self, change_source: bool) -> tuple[float, str, str]:
        repository = self.repository()
        run_id = self.client.start(repository, crash=CRASH_AFTER_VERIFY)
        self.client.wait_for_one(run_id, WAITING_ON_A_PERSON, TIMEOUT_S)
        if change_source:
            edit_sample_repository(repository)
        started = time.time()
        execution = self.client.resume(run_id)
        run = self.client.wait_for_one(run_id, WAITING_ON_A_PERSON, TIMEOUT_S, execution=execution)
        return seconds_until(run, started), run_id, execution


def measure(client: BenchClient, root: Path, suite_s: float, repeats: int) -> list[Scenario]:
    restarts = Restarts(client, root, suite_s)
    scenarios: list[tuple[str, Callable[[], tuple[float, str, str]]]] = [
        ("fresh run to review", restarts.fresh),
        ("resume after a crash after verify", lambda: restarts.resume_after_crash(change_source=False)),
        ("resume after a source change", lambda: restarts.resume_after_crash(change_source=True)),
    ]
    measured = []
    for name, scenario in scenarios:
        timings, stages, statuses = [], [], []
        for repeat in range(repeats):
            seconds, run_id, execution = scenario()
            view = client.view(run_id)
            timings.append(seconds)
            stages.append(sum(1 for record in view["stages"].values() if record.get("execution") == execution))
            statuses.append(view["run"]["status"])
            progress(f"  {name} ({repeat + 1}/{repeats}): {seconds:.2f}s, {statuses[-1]}")
        # One repeat handed to a person is the scenario's finding, whatever the others did.
        worst = next((status for status in statuses if status != "awaiting_review"), "awaiting_review")
        measured.append(Scenario(name, statistics.median(timings), max(stages), worst))
    return measured


def table(scenarios: list[Scenario], suite_s: float, repeats: int, resume_target: float) -> Table:
    fresh = scenarios[0]
    result = Table(f"(a) Restart against starting over (a {suite_s:g} s test suite; median of {repeats})",
                   ["scenario", "to review (s)", "stages run", "vs fresh", "stopped at"])
    for scenario in scenarios:
        result.add(scenario.name, scenario.seconds, scenario.stages_run, ratio(scenario.seconds, fresh.seconds),
                   scenario.status)
    after_verify = scenarios[1]
    reached_review = all(scenario.status == "awaiting_review" for scenario in (fresh, after_verify))
    result.target(ratio(after_verify.seconds, fresh.seconds) if reached_review else f"a run ended {after_verify.status}",
                  Target(f"resume after verify <= {resume_target}x a fresh run",
                         reached_review and after_verify.seconds <= resume_target * fresh.seconds))
    return result
