"""(b) The AWS requests a run sends, by service, against the fewest it could send.

How the requests are counted: tests/bench/request_counter.py.

The floor: the fewest requests a run of this shape needs, whatever the code, given what the design
requires (every fact in the ledger before it is acted on, every change a conditional write, every
external write keyed and confirmed). With I the Lambda invocations that work on the run, X its
executions, T its state transitions, S its committed stages, B its test builds, W the waits
parked on them, A its artifacts, E its effects (N of them notifications) and R the review answers:

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
  reads the inventory; execute the plan when it starts its build and again when the build's end
  wakes it (the plan names the files the build may return); verify the written files when it
  starts its build, and not when woken (the ledger holds their digest, which names the build);
  each build's results once; the pull request the written files (G = 7 for a run that writes
  tests and opens a pull request).
- Step Functions, X + R + B: each execution is started once, each review answer sent once, and
  each build's end answers the wait parked on it once.
- CodeBuild, 3B: each build is started once, looked at once by the wait parked on it (the build
  may have ended before it was parked) and once by the stage its end wakes (payloads carry only
  ids, so that stage asks how the build ended). The stage that starts a build does not look at it:
  the wait does. (This term was B + V, one look per invocation of verify, its wait's among them:
  written when verify alone ran a build, it counted no look at execute's build, and one at the
  build verify had just started, which the design does not need. For a run of two builds it gave
  5 where the run needs 6.)
- SNS, N: one Publish per notification (its FIFO deduplication id is the idempotency key).
- Lambda, Secrets Manager, CloudWatch, CloudWatch Logs: 0 on a warm run (a function reads its
  secrets once per container and keeps them five minutes; a cold run shows the reads).

The same terms, given to the function that sends them, are each function's floor: what the table
by function compares it with, naming the services where a function sends more (`floor_by_function`).
The test builds' own requests (each fetches its input and posts its results through presigned
links) are no function's: they are shown on a line of their own, and are in neither the total
nor the floor (request_counter.py).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentledger.states import EFFECTS

from .report import Table, Target, ratio, short_function_name
from .request_counter import ENGINE, OUTSIDE_FUNCTIONS, SERVICES, Request, RequestCounter
from .timeline import BUILD_WAIT_STATES, Invocation, Timeline, timeline

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
                "codebuild": 3 * self.builds,
                "sns": self.notifications}


# Sent by no function of the run: Step Functions' and API Gateway's invocations, and the test builds'
# own traffic (locally, the S3 endpoint answering a build's presigned GET and POST).
NOT_THE_FUNCTIONS = (ENGINE, OUTSIDE_FUNCTIONS)


def by_service(counts: Counter[Request]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for request, number in counts.items():
        if request.function not in NOT_THE_FUNCTIONS:
            totals[request.service] += number
    return totals


def engine_invocations(counts: Counter[Request]) -> int:
    return sum(number for request, number in counts.items() if request.function == ENGINE)


def outside_functions(counts: Counter[Request]) -> int:
    return sum(number for request, number in counts.items() if request.function == OUTSIDE_FUNCTIONS)


API_FUNCTION = "ApiFunction"
BUILD_ENDED_FUNCTION = "BuildEndedFunction"


def _function_of(invocation: Invocation) -> str:
    return short_function_name(invocation.function.rsplit(":", 1)[-1])


def floor_by_function(view: dict[str, Any], executed: Timeline, shape: RunShape) -> dict[str, Counter[str]]:
    """The floor's terms (the module docstring), each given to the function that sends it: the
    functions Step Functions invoked by the history's invocations of each stage or effect, the API
    and the build's end by name. Sums to `shape.floor()` for every service."""
    floors: dict[str, Counter[str]] = {}

    def add(function: str, service: str, number: int = 1) -> None:
        floors.setdefault(function, Counter())[service] += number

    working = [invocation for invocation in executed.invocations if invocation.state not in BUILD_WAIT_STATES]
    of_stage = {invocation.stage: _function_of(invocation) for invocation in working if invocation.stage}
    waits_of_stage = {invocation.stage: _function_of(invocation) for invocation in executed.invocations
                      if invocation.state in BUILD_WAIT_STATES}
    for invocation in executed.invocations:
        add(_function_of(invocation), "dynamodb")  # the run read once, or a wait's parking
    if executed.invocations:
        add(_function_of(executed.invocations[0]), "dynamodb", shape.executions)  # the assessment
    add(API_FUNCTION, "dynamodb", 1 + 2 * shape.review_answers)  # the create; a review answer read and recorded
    add(API_FUNCTION, "sfn", shape.executions + shape.review_answers)
    moved = [t["to_state"] for t in view["transitions"] if t["from_state"] != t["to_state"]]
    committed = [name for name, record in view["stages"].items() if record["status"] == "complete"]
    for stage in [*moved, *committed]:
        add(of_stage.get(stage, API_FUNCTION), "dynamodb")
    for test_run in view["test_runs"].values():
        function = of_stage[test_run["stage"]]
        add(function, "dynamodb")  # the build's id
        add(function, "codebuild", 2)  # its start, and the look of the stage its end wakes
        add(waits_of_stage[test_run["stage"]], "codebuild")  # the look of the wait parked on it
        add(function, "s3", 2)  # its input, and its results, read
        add(BUILD_ENDED_FUNCTION, "dynamodb", 4)
        add(BUILD_ENDED_FUNCTION, "sfn")
    for stage in ("plan", "execute"):
        if stage in committed:
            add(of_stage[stage], "s3")  # the inventory, the plan
    for ref in view["artifacts"]:
        add(of_stage.get(ref["stage"], API_FUNCTION), "s3")
    for effect in view["effects"].values():
        function = of_stage.get(effect["kind"]) or of_stage[EFFECTS[effect["kind"]].stage]
        add(function, "dynamodb", 4)
        if EFFECTS[effect["kind"]].receiver == "notifications":
            add(function, "sns")
        if effect["kind"] == "pull_request":
            add(function, "s3")  # the written files
    return floors


@dataclass(frozen=True)
class RequestsMeasurement:
    first: Counter[Request]  # the first run after deploy: every function cold
    warm: Counter[Request]
    run: FullRun  # the warm one
    shape: RunShape
    history: list[dict[str, Any]]  # of the warm run's execution, for the bare engine to replay
    floors: dict[str, Counter[str]]  # the floor, by function (short name) and service


def measure(client: BenchClient, counter: RequestCounter, repository: Callable[[], Path],
            timeout_s: float) -> RequestsMeasurement:
    """Two full runs of the same repository, start to complete: the first (cold) and the second."""
    with counter.counting() as first:
        client.full_run(repository(), timeout_s)
    with counter.counting() as warm:
        run = client.full_run(repository(), timeout_s)
    history = client.execution_history(run.execution)
    view, executed = client.view(run.run_id), timeline(history)
    shape = RunShape.of(view, executed, review_answers=1)
    return RequestsMeasurement(first, warm, run, shape, history, floor_by_function(view, executed, shape))


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
    table.add("the test builds' own S3 requests (not in the total)",
              outside_functions(measured.first), outside_functions(measured.warm), "-", "-")
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
    shared = Counter()
    for floor_of_function in measured.floors.values():
        shared.update(floor_of_function)
    if +shared != +Counter(floor):
        table.notes.append(f"the floor by function ({dict(shared)}) does not add up to the floor: a term is not given "
                           "to the function that sends it")
    shape = measured.shape
    table.notes.append(
        f"floor for this run's shape: I={shape.invocations} invocations, X={shape.executions} execution(s), "
        f"T={shape.transitions} transitions, S={shape.stages_committed} stages, B={shape.builds} build(s), "
        f"W={shape.build_waits} build wait(s), A={shape.artifacts} artifacts, G={shape.consumed_inputs} "
        f"inputs read, E={shape.effects} effects (N={shape.notifications} notifications), R={shape.review_answers} "
        "review answer (derivation: tests/bench/aws_requests.py)")
    return [table, _by_function(measured.warm, measured.floors)]


def _by_function(counts: Counter[Request], floors: dict[str, Counter[str]]) -> Table:
    """Each function's requests against its share of the floor, and where it sends more."""
    table = Table("(b) AWS requests of the warm run, by function, against each function's floor",
                  ["function", "requests", "floor", "above the floor", "operations"])
    functions: dict[str, Counter[str]] = {}
    for request, number in counts.items():
        if request.function not in NOT_THE_FUNCTIONS:
            functions.setdefault(short_function_name(request.function), Counter())[
                f"{request.service}:{request.operation}"] += number
    for function in set(floors) - set(functions):
        functions[function] = Counter()
    for function, operations in sorted(functions.items(), key=lambda item: -sum(item[1].values())):
        floor = floors.get(function, Counter())
        sent: Counter[str] = Counter()
        for operation, number in operations.items():
            sent[operation.split(":", 1)[0]] += number
        above = ", ".join(f"{SERVICES.get(service, service)} {sent[service] - floor[service]:+d}"
                          for service in sorted(set(sent) | set(floor)) if sent[service] != floor[service])
        table.add(function, sum(operations.values()), sum(floor.values()), above or "-",
                  ", ".join(f"{operation} {number}" for operation, number in operations.most_common()))
    return table

