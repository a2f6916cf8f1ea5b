"""`make bench`: what a restart costs compared with starting over, on the local stack.

The sample repository gets a deliberately slow test suite (each generated test sleeps), as real
suites are slow; the table shows the wall time to reach review for a fresh run, for a resume after
the process died after verification (the ledger says the tests already ran), and for a resume
after a source change (everything from inspect must be redone)."""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from agentledger.service import run_id_for

from infra.local.principals import principal_arn
from infra.local.runtime import LocalRuntime
from tests.samples import edit_sample_repository, write_sample_repository

SLOW_MODULE = '''"""Something slow to test."""
import time


def settle(seconds):
    """Wait, then report.

    >>> settle(1.0)
    'settled'
    """
    time.sleep(seconds)
    return "settled"
'''
REPEATS = 3


class Bench:
    def __init__(self, runtime: LocalRuntime, root: Path) -> None:
        self.runtime = runtime
        self.root = root

    def repository(self) -> Path:
        repo = write_sample_repository(self.root / uuid.uuid4().hex[:8])
        (repo / "textkit" / "slow.py").write_text(SLOW_MODULE)
        return repo

    def start(self, repo: Path, crash: str | None = None) -> str:
        key = str(uuid.uuid4())
        if crash:
            self.runtime.crashes.arm(run_id_for(key), crash)
        response = self.runtime.call_api("POST", "/runs", body={"repository": str(repo), "request": "bench"},
                                         caller=principal_arn("requester"),
                                         headers={"Idempotency-Key": key})
        return response.json()["run_id"]

    def until_review(self, run_id: str) -> dict:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            view = self.runtime.call_api("GET", f"/runs/{run_id}").json()
            run, review = view["run"], view.get("review") or {}
            if run["status"] == "needs_person" or (
                    run["status"] == "awaiting_review" and review.get("execution") == run["active_execution"]):
                return view
            time.sleep(0.02)
        raise TimeoutError(run_id)

    def fresh(self) -> tuple[float, dict]:
        started = time.monotonic()
        view = self.until_review(self.start(self.repository()))
        return time.monotonic() - started, view

    def resume_after_crash(self, change_source: bool) -> tuple[float, dict]:
        repo = self.repository()
        run_id = self.start(repo, crash="verify:after_commit")
        self.runtime.wait_for_execution(f"{run_id}-start", timeout_s=120)
        if change_source:
            edit_sample_repository(repo)
        started = time.monotonic()
        self.runtime.call_api("POST", f"/runs/{run_id}/resume", caller=principal_arn("operator"))
        view = self.until_review(run_id)
        return time.monotonic() - started, view


def _stages_run(view: dict, since_execution: str | None) -> int:
    return sum(1 for record in view["stages"].values()
               if since_execution is None or record.get("execution") == since_execution)


def measure(name: str, scenario: Callable[[], tuple[float, dict]], resumed: bool) -> tuple[str, float, int]:
    timings, stages = [], []
    for _ in range(REPEATS):
        seconds, view = scenario()
        timings.append(seconds)
        stages.append(_stages_run(view, view["run"]["active_execution"] if resumed else None))
        print(f"  {name}: {seconds:.2f}s", flush=True)
    return name, statistics.median(timings), max(stages)


def cli_import_seconds() -> float:
    """Cold start of `agentledger --help`: a fresh interpreter importing the CLI (best of REPEATS)."""
    best = min(_timed([sys.executable, "-c", "import infra.cli.main"]) for _ in range(REPEATS))
    bare = min(_timed([sys.executable, "-c", "pass"]) for _ in range(REPEATS))
    return best - bare


def _timed(command: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(command, check=True)
    return time.monotonic() - started


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-") as tmp:
        root = Path(tmp)
        runtime = LocalRuntime(workspace_root=root / "workspaces").start()
        try:
            bench = Bench(runtime, root)
            print(f"measuring (median of {REPEATS}; the generated tests sleep 1 s, like a slow suite)...", flush=True)
            rows = [
                measure("fresh run to review", bench.fresh, resumed=False),
                measure("resume after a crash after verify", lambda: bench.resume_after_crash(False), resumed=True),
                measure("resume after a source change", lambda: bench.resume_after_crash(True), resumed=True),
            ]
        finally:
            runtime.stop()
    baseline = rows[0][1]
    print(f"\n{'scenario':<36} {'to review (s)':>14} {'stages run':>11} {'vs fresh':>9}")
    for name, seconds, stages in rows:
        print(f"{name:<36} {seconds:>14.2f} {stages:>11} {seconds / baseline:>8.2f}x")
    print(f"\nCLI import for `agentledger --help`, beyond a bare interpreter: {cli_import_seconds():.3f}s "
          "(target: under 0.2 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
