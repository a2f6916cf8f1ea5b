"""`make bench`: agentledger's performance report, measured on the local stack in one run.

(a) a fresh run, a resume after verify and a resume after a source change, with a slow suite
    (tests/bench/restarts.py);
(b) AWS requests per run by service, against the floor derived in tests/bench/aws_requests.py;
(c) the same ASL with no-op functions, the bare engine, against agentledger (tests/bench/engine.py);
(d) inspect and a full run on generated repositories of 100, 1,000 and 10,000 files: time and
    peak memory (tests/bench/scale.py);
(e) concurrent runs: time until all reach review, how many were handed to a person, transitions
    lost or doubled (tests/bench/concurrency.py);
(f) the cold import time of each handler module (tests/bench/imports.py);
(g) the console's run page of (d)'s largest run, rendered in chromium (tests/bench/console.py);
(h) what (b)'s warm run costs on AWS, by service, from a dated price table, with the test builds'
    minutes apart, and its orchestration priced on Lambda durable functions and Temporal Cloud
    (tests/bench/cost.py measures, tests/bench/cost_model.py prices).

Each target is printed beside its figure with a mark, never asserted. The exit status is non-zero
only if the bench itself crashed (a phase raised): a missed target, or a run handed to a person,
is a figure in the report. `make bench` runs every phase at sizes that fit in 20 minutes on two
cores; `make bench-full` (`--full`) at the sizes the targets name (200 runs at once, 10,000 files),
over an hour; `--quick` shrinks every size for developing the bench. A target measured at a smaller
size is printed with that size and no mark. Progress goes to stderr, one line per phase; the
report goes to stdout."""
from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.local.runtime import LocalRuntime
from tests.samples import write_sample_repository

from . import aws_requests, concurrency, console, cost, cost_model, engine, imports, restarts, scale
from .client import BenchClient
from .report import Table, crashed, progress, summary
from .request_counter import RequestCounter
from .timeline import timeline

if TYPE_CHECKING:
    from collections.abc import Callable

RESUME_TARGET = 0.01  # resume after verify, as a share of a fresh run
REQUESTS_TARGET = 1.15  # requests per run, as a multiple of the floor (issue 33)
LARGEST_REPOSITORY = 10_000  # files, end to end
INSPECT_TARGET_S = 1.0  # inspect of the largest repository
CONCURRENT_RUNS = 200  # all at review, none handed to a person, queueing for TEST_BUILD_LIMIT builds
CLI_IMPORT_TARGET_S = 0.2
HANDLER_IMPORT_TARGET_S = 0.25  # paid on every Lambda cold start
CONSOLE_RUN_PAGE_TARGET_S = 1.0  # the run page of the largest repository's run, in the browser
RUN_TIMEOUT_S = 600
TEST_BUILD_LIMIT = 5  # CodeBuild's quota, scaled down so that (e)'s runs queue for it
BENCH_CONTEXT = {"writer": "doctest", "testBuildConcurrency": TEST_BUILD_LIMIT}


@dataclass(frozen=True)
class Sizes:
    suite_s: float
    repeats: int
    repository_files: tuple[int, ...]
    concurrent_runs: int
    import_repeats: int
    page_loads: int


FULL = Sizes(suite_s=10.0, repeats=3, repository_files=(100, 1_000, 10_000), concurrent_runs=200, import_repeats=3,
             page_loads=5)
DEFAULT = Sizes(suite_s=5.0, repeats=1, repository_files=(100, 1_000), concurrent_runs=25, import_repeats=3,
                page_loads=3)
QUICK = Sizes(suite_s=1.0, repeats=1, repository_files=(100, 1_000), concurrent_runs=10, import_repeats=1,
              page_loads=2)


@dataclass
class Bench:
    runtime: LocalRuntime
    client: BenchClient
    counter: RequestCounter
    sizes: Sizes
    root: Path
    requests: aws_requests.RequestsMeasurement | None = None  # (c) replays (b)'s warm run
    scaled: list[scale.Measured] | None = None  # (g) opens the largest run (d) ran
    crashed: bool = False

    def sample_repository(self) -> Path:
        return write_sample_repository(Path(tempfile.mkdtemp(prefix="sample-", dir=self.root)))


def measure_requests(bench: Bench) -> list[Table]:
    bench.requests = aws_requests.measure(bench.client, bench.counter, bench.sample_repository, RUN_TIMEOUT_S)
    return aws_requests.tables(bench.requests, REQUESTS_TARGET)


def measure_engine(bench: Bench) -> list[Table]:
    if bench.requests is None:
        raise RuntimeError("the bare engine replays the run that (b) measured, and (b) did not measure one")
    real = timeline(bench.requests.history)
    return [engine.table(real, engine.replay(bench.runtime, bench.requests.history))]


def measure_cost(bench: Bench) -> list[Table]:
    if bench.requests is None:
        raise RuntimeError("the cost model prices the run that (b) measured, and (b) did not measure one")
    usage = cost.measure(bench.runtime, bench.client, bench.requests)
    keeper = cost.measure_review_wait(bench.client, bench.sample_repository(), RUN_TIMEOUT_S)
    return cost_model.tables(usage, keeper, cost_model.load_prices())


def measure_restarts(bench: Bench) -> list[Table]:
    scenarios = restarts.measure(bench.client, bench.root, bench.sizes.suite_s, bench.sizes.repeats)
    return [restarts.table(scenarios, bench.sizes.suite_s, bench.sizes.repeats, RESUME_TARGET)]


def measure_scale(bench: Bench) -> list[Table]:
    bench.scaled = scale.measure(bench.client, bench.root, bench.sizes.repository_files)
    return [scale.table(bench.scaled, LARGEST_REPOSITORY, INSPECT_TARGET_S)]


def measure_console(bench: Bench) -> list[Table]:
    if not bench.scaled:
        raise RuntimeError("the console opens the largest run (d) ran, and (d) ran none")
    largest = max(bench.scaled, key=lambda row: row.files)
    measured = console.measure(bench.runtime, largest.run_id, largest.files, bench.sizes.page_loads)
    return [console.table(measured, CONSOLE_RUN_PAGE_TARGET_S, LARGEST_REPOSITORY)]


def measure_concurrency(bench: Bench) -> list[Table]:
    measured = concurrency.measure(bench.client, bench.sample_repository, bench.sizes.concurrent_runs)
    return [concurrency.table(measured, CONCURRENT_RUNS)]


def measure_imports(bench: Bench) -> list[Table]:
    functions = bench.runtime.client("lambda")
    assert bench.runtime.stack is not None
    deployed = {name: functions.get_function_configuration(FunctionName=name)
                for name in bench.runtime.stack.functions.values()}
    measured = imports.measure(deployed, bench.sizes.import_repeats)
    return [imports.table(measured, bench.sizes.import_repeats, CLI_IMPORT_TARGET_S, HANDLER_IMPORT_TARGET_S)]


@dataclass(frozen=True)
class Phase:
    name: str
    letter: str  # where its tables go in the report
    title: str  # what a crash of the phase prints
    targets: tuple[str, ...]  # what a crash of the phase leaves unmet
    measure: Callable[[Bench], list[Table]]


# In the order they run: (b) first, so its first run is the first after deploy (every function
# cold), and (c) replays (b)'s warm run and (h) prices it; the concurrent runs (e) last, since what
# they leave running at their deadline (stage work, test builds) would weigh on any phase after them.
PHASES = (
    Phase("requests", "b", "(b) AWS requests per run", (aws_requests.goal(REQUESTS_TARGET),), measure_requests),
    Phase("engine", "c", "(c) The engine alone against agentledger", (), measure_engine),
    Phase("cost", "h", "(h) What a run costs on AWS", (cost_model.goal(),), measure_cost),
    Phase("restarts", "a", "(a) Restart against starting over", (restarts.goal(RESUME_TARGET),), measure_restarts),
    Phase("scale", "d", "(d) A full run on generated repositories", scale.goals(LARGEST_REPOSITORY, INSPECT_TARGET_S),
          measure_scale),
    Phase("console", "g", "(g) The console's run page in chromium",
          (console.goal(LARGEST_REPOSITORY, CONSOLE_RUN_PAGE_TARGET_S),), measure_console),
    Phase("imports", "f", "(f) Cold import of each handler module", (imports.goal(CLI_IMPORT_TARGET_S),
                                                                      imports.handler_goal(HANDLER_IMPORT_TARGET_S)),
          measure_imports),
    Phase("concurrency", "e", "(e) Concurrent runs", (concurrency.goal(CONCURRENT_RUNS),), measure_concurrency),
)
# (c) replays (b)'s run and (h) prices it; (g) opens (d)'s.
DEPENDS_ON = {"engine": "requests", "cost": "requests", "console": "scale"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    sized = parser.add_mutually_exclusive_group()
    sized.add_argument("--full", action="store_true", help="the sizes the targets name (over an hour)")
    sized.add_argument("--quick", action="store_true", help="small sizes, for developing the bench")
    parser.add_argument("--only", type=lambda text: set(text.split(",")), default=None,
                        help="comma-separated phases: " + ",".join(phase.name for phase in PHASES))
    args = parser.parse_args(argv)
    sizes = FULL if args.full else QUICK if args.quick else DEFAULT
    wanted = None if args.only is None else args.only | {DEPENDS_ON[name] for name in args.only if name in DEPENDS_ON}
    phases = [phase for phase in PHASES if wanted is None or phase.name in wanted]
    counter = RequestCounter()
    unhook = counter.install()  # before the runtime creates any botocore session
    tables: dict[str, list[Table]] = {}
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-") as tmp:
        root = Path(tmp)
        progress("starting the local stack")
        # The doctest writer: what the bench measures is the workflow (restarts, requests, scale,
        # concurrency), not Pynguin's searches, whose cost `make agent-report` reports per package.
        runtime = LocalRuntime(workspace_root=root / "workspaces", repository_roots=(root,), context=BENCH_CONTEXT)
        try:
            runtime.start()
        except Exception as error:  # noqa: BLE001 — a stack that does not start is every phase's crash
            traceback.print_exc(file=sys.stderr)
            tables = {phase.letter: [crashed(phase.title, error, phase.targets)] for phase in phases}
            bench_crashed = True
        else:
            bench = Bench(runtime, BenchClient(runtime, counter), counter, sizes, root)
            try:
                for phase in phases:
                    progress(f"{phase.name}...")
                    tables[phase.letter] = _measured(bench, phase)
            finally:
                _stop(runtime)
            bench_crashed = bench.crashed
        finally:
            unhook()
    report = [table for letter in sorted(tables) for table in tables[letter]]
    print("\n\n".join(table.render() for table in [*report, summary(report)]))
    return 1 if bench_crashed else 0


def _stop(runtime: LocalRuntime) -> None:
    """Every figure is measured by now: a stack that fails to stop cleanly is reported, not fatal."""
    progress("stopping the local stack")
    try:
        runtime.stop()
    except Exception:  # noqa: BLE001 — the report is complete and still prints
        traceback.print_exc(file=sys.stderr)
        progress("the local stack did not stop cleanly (above); the report is complete")


def _measured(bench: Bench, phase: Phase) -> list[Table]:
    try:
        return phase.measure(bench)
    except Exception as error:  # noqa: BLE001 — the report still prints, with this phase as crashed
        traceback.print_exc(file=sys.stderr)
        bench.crashed = True
        return [crashed(phase.title, error, phase.targets)]


if __name__ == "__main__":
    raise SystemExit(main())
