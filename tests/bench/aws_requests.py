"""(b) The AWS requests a run sends, by service, against the fewest it could send.

How the requests are counted: tests/bench/request_counter.py.

The floor: the fewest requests a run of this shape needs, whatever the code, given what the design
requires (every fact in the ledger before it is acted on, every change a conditional write, every
external write keyed and confirmed). With I the Lambda invocations that work on the run, X its
executions, T its state transitions, S its committed stages, B its test builds, W the waits
parked on them, V its verify invocations (a wait for verify's build among them), A its artifacts,
E its effects (N of them notifications) and R the review answers:

- DynamoDB, I - W + R + 2B reads and 1 + X + T + S + B + R + 4E + W + 2B writes. Each invocation
  but a wait's, and the API answering a review, reads the run once (the ledger is the state;
  payloads carry only ids; a wait is told its build by the stage's answer). A wait parks once;
  each build's end reads what waits on it and the queue for room, takes the parking and marks
  the queue as moving. The
  run is created with one conditional put (its id derives from the Idempotency-Key, so that put is
  the request's idempotency too); each execution records its assessment (a decision); each
  transition is one conditional write and each stage commits its outputs and evidence in one; a
  build's id is written before anything waits on it; a review answer is recorded before it is
  delivered. An effect writes its record before the call (attempted) and after the receiver
  confirms, and Powertools idempotency writes its own record twice (in progress, completed).
- S3, A puts and G gets: one put per artifact, and one get per input a step consumes: the plan
  reads the inventory, execute the plan, verify the written files and each build's results, the
  pull request the written files (G = 5 for a run that writes tests and opens a pull request).
- Step Functions, X + R + B: each execution is started once, each review answer sent once, and
  each build's end answers the wait parked on it once.
- CodeBuild, B + V: one StartBuild per build and one BatchGetBuilds per verify invocation (the
  wait looks once after parking: the build may have ended before).
- SNS, N: one Publish per notification (its FIFO deduplication id is the idempotency key).
- Lambda, Secrets Manager, CloudWatch, CloudWatch Logs: 0 on a warm run (a function reads its
  secrets once per container and keeps them five minutes; a cold run shows the reads).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.states import EFFECTS

from .report import Table, Target, ratio, short_function_name
from .request_counter import ENGINE, SERVICES, Request, RequestCounter
from .timeline import BUILD_WAIT_STATES, Timeline, timeline

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from .client import BenchClient, FullRun


@dataclass(frozen=True)
class RunShape:
    """The quantities the floor is a function of (see the module docstring), read from the run's
    ledger view and its execution history."""
    invocations: int  # I
    executions: int  # X
    transitions: int  # T
    stages_committed: int  # S
    builds: int  # B
    build_waits: int  # W
    verify_invocations: int  # V
    artifacts: int  # A
    consumed_inputs: int  # G
    effects: int  # E
    notifications: int  # N
    review_answers: int  # R

    @classmethod
    def of(cls, view: dict[str, Any], executed: Timeline, review_answers: int) -> RunShape:
        stages = {name for name, record in view["stages"].items() if record["status"] == "complete"}
        effects = list(view["effects"].values())
        builds = len(view["test_runs"])
        opened_pull_request = any(effect["kind"] == "pull_request" for effect in effects)
        return cls(
            invocations=len(executed.invocations),
            executions=len(view["run"]["executions"]),
            transitions=sum(1 for t in view["transitions"] if t["from_state"] != t["to_state"]),
            stages_committed=len(stages),
            builds=builds,
            build_waits=sum(1 for invocation in executed.invocations if invocation.state in BUILD_WAIT_STATES),
            verify_invocations=len(executed.invocations_of("verify")),
            artifacts=len(view["artifacts"]),
            consumed_inputs=("plan" in stages) + ("execute" in stages) + 2 * builds + opened_pull_request,
            effects=len(effects),
            notifications=sum(1 for effect in effects if EFFECTS[effect["kind"]].receiver == "notifications"),
            review_answers=review_answers,
        )

    def floor(self) -> dict[str, int]:
        reads = self.invocations - self.build_waits + self.review_answers + 2 * self.builds
        writes = (1 + self.executions + self.transitions + self.stages_committed + self.builds
                  + self.review_answers + 4 * self.effects + self.build_waits + 2 * self.builds)
        return {"dynamodb": reads + writes, "s3": self.artifacts + self.consumed_inputs,
                "sfn": self.executions + self.review_answers + self.builds,
                "codebuild": self.builds + self.verify_invocations,
                "sns": self.notifications}


def by_service(counts: Counter[Request]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for request, number in counts.items():
        if request.function != ENGINE:
            totals[request.service] += number
    return totals


def engine_invocations(counts: Counter[Request]) -> int:
    return sum(number for request, number in counts.items() if request.function == ENGINE)


@dataclass(frozen=True)
class RequestsMeasurement:
    first: Counter[Request]  # the first run after deploy: every function cold
    warm: Counter[Request]
    run: FullRun  # the warm one
    shape: RunShape
    history: list[dict[str, Any]]  # of the warm run's execution, for the bare engine to replay


def measure(client: BenchClient, counter: RequestCounter, repository: Callable[[], Path],
            timeout_s: float) -> RequestsMeasurement:
    """Two full runs of the same repository, start to complete: the first (cold) and the second."""
    with counter.counting() as first:
        client.full_run(repository(), timeout_s)
    with counter.counting() as warm:
        run = client.full_run(repository(), timeout_s)
    history = client.execution_history(run.execution)
    shape = RunShape.of(client.view(run.run_id), timeline(history), review_answers=1)
    return RequestsMeasurement(first, warm, run, shape, history)


def goal(target_ratio: float) -> str:
    return f"requests per run <= {target_ratio}x the floor"


def tables(measured: RequestsMeasurement, target_ratio: float) -> list[Table]:
    first, warm, floor = by_service(measured.first), by_service(measured.warm), measured.shape.floor()
    services = list(SERVICES) + sorted((set(first) | set(warm)) - set(SERVICES))
    table = Table("(b) AWS requests per run, by service (the sample repository, start to complete)",
                  ["service", "first run (cold)", "warm run", "floor", "warm / floor"])
    for service in services:
        table.add(SERVICES.get(service, service), first[service], warm[service], floor.get(service, 0),
                  ratio(warm[service], floor[service]) if floor.get(service) else "-")
    total_warm, total_floor = sum(warm.values()), sum(floor.values())
    table.add("total", sum(first.values()), total_warm, total_floor, ratio(total_warm, total_floor))
    table.add("Lambda invoked by Step Functions / API Gateway (not in the total)",
              engine_invocations(measured.first), engine_invocations(measured.warm), "-", "-")
    completed = measured.run.status == "complete"
    figure = f"{total_warm} / {total_floor} = {ratio(total_warm, total_floor)}" if completed \
        else f"run ended {measured.run.status}"
    met = completed and total_warm <= target_ratio * total_floor
    table.target(figure, Target(goal(target_ratio), met))
    if completed and not met:
        above = sorted(((warm[service] - floor.get(service, 0), service) for service in services), reverse=True)
        table.notes.append("missed because: " + ", ".join(
            f"{SERVICES.get(service, service)} {excess} above its floor" for excess, service in above if excess > 0)
            + " (by function below; docs/performance/latest.md)")
    shape = measured.shape
    table.notes.append(
        f"floor for this run's shape: I={shape.invocations} invocations, X={shape.executions} execution(s), "
        f"T={shape.transitions} transitions, S={shape.stages_committed} stages, B={shape.builds} build(s), "
        f"W={shape.build_waits} build wait(s), "
        f"V={shape.verify_invocations} verify invocations, A={shape.artifacts} artifacts, G={shape.consumed_inputs} "
        f"inputs read, E={shape.effects} effects (N={shape.notifications} notifications), R={shape.review_answers} "
        "review answer (derivation: tests/bench/aws_requests.py)")
    return [table, _by_function(measured.warm)]


def _by_function(counts: Counter[Request]) -> Table:
    table = Table("(b) AWS requests of the warm run, by function", ["function", "requests", "operations"])
    functions: dict[str, Counter[str]] = {}
    for request, number in counts.items():
        if request.function != ENGINE:
            functions.setdefault(request.function, Counter())[f"{request.service}:{request.operation}"] += number
    for function, operations in sorted(functions.items(), key=lambda item: -sum(item[1].values())):
        table.add(short_function_name(function), sum(operations.values()),
                  ", ".join(f"{operation} {number}" for operation, number in operations.most_common()))
    return table

