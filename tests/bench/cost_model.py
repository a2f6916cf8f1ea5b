"""The cost model of (h): a run's usage, as AWS meters it, times a dated price table; and the same
run's orchestration priced on Lambda durable functions and Temporal Cloud. It needs no stack: the
figures come from tests/bench/cost.py, which measures them on the local stack.

Billed as AWS bills: a Lambda invocation's duration rounded up to the millisecond, times its
memory in GB; a DynamoDB request as one request unit (items under 1 KB written, 4 KB read: a
floor, since index updates and larger items take more); a test build's minutes rounded up, per
build. The builds' minutes are a line of their own: they are the cost of the code under test,
which grows with the repository's suite, not the workflow's. So is a review pending a week: the
review keeper's passes in that week, each as measured with that one review pending.

Derived from the measured counts, not measured: KMS requests (one to encrypt each output grant
parameter, one when CodeBuild decrypts it for the build, one per SNS publish to the encrypted
topic, assuming no data-key reuse); X-Ray traces (one per API request and one per execution, every
one sampled). The durable-functions and Temporal figures are a model, not a measurement (see
`alternatives`). Prices: tests/bench/prices.json, us-east-1 list prices, each with the date it was
checked, its source and whether the figure was confirmed there."""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from agentledger.limits import REVIEW_HEARTBEAT_SECONDS, REVIEW_KEEPER_INTERVAL_MINUTES

from .report import Table, Target, ratio
from .request_counter import SERVICES, Request
from .timeline import BUILD_WAIT_STATES, DEFINITION

PRICES_FILE = Path(__file__).with_name("prices.json")
RUNS_AT_SCALE = 1_000
GB = 2**30  # AWS bills storage and data in binary gigabytes
TRANSITIONS_PER_LOOK = 3  # the wait (a Wait state, or the parked task), the stage's task again, its Choice
CODEBUILD_BUILD_S = 600  # a build's time on CodeBuild for the polling projection: queue, provisioning, suite
# How the stages looked at a running build before its end woke them (releases up to 2026-12-06): after
# a quarter of the time waited so far, within these bounds, for the polling projection.
FORMER_POLL_BOUNDS_S = (2, 30)
DURABLE_RETENTION_DAYS = 14  # Lambda durable functions' default retention of a closed execution
DAYS_PER_MONTH = 30
HOURS_PER_MONTH = 730  # as AWS prorates a monthly price by the hour
KEEPER_PASSES_A_WEEK = 7 * 24 * 60 // REVIEW_KEEPER_INTERVAL_MINUTES
SUBTOTAL = "workflow, one run"
# The stage states a build wait sends back to, and the build waits: what one look at a build invokes.
LOOK_STATES = BUILD_WAIT_STATES | frozenset(json.loads(DEFINITION.read_text())["States"][name]["Next"]
                                            for name in BUILD_WAIT_STATES)

# The price row of a request, by service (botocore's hyphenated id): the operations priced apart from
# the service's default, then the default. A service missing here is reported as not priced.
REQUEST_PRICES: dict[str, tuple[dict[str, str], str]] = {
    "dynamodb": (dict.fromkeys(("GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"),
                               "dynamodb-read-request-unit"), "dynamodb-write-request-unit"),
    "s3": ({"GetObject": "s3-get-request", "HeadObject": "s3-get-request", "DeleteObject": "s3-free-request"},
           "s3-put-request"),
    "sfn": ({}, "sfn-api-request"),
    "lambda": ({"Invoke": "lambda-request"}, "lambda-api-request"),
    "codebuild": ({}, "codebuild-api-request"),
    "sns": ({}, "sns-fifo-publish"),
    "ssm": ({}, "ssm-standard-request"),
    "kms": ({}, "kms-request"),
    "secrets-manager": ({}, "secretsmanager-request"),
    "cloudwatch": ({}, "cloudwatch-request"),
    "cloudwatch-logs": ({}, "cloudwatch-logs-request"),
}
SERVICE_NAMES = {**SERVICES, "ssm": "SSM Parameter Store", "kms": "KMS", "apigateway": "API Gateway",
                 "xray": "X-Ray", "codebuild-builds": "CodeBuild test builds"}


@dataclass(frozen=True)
class Price:
    usd: float  # per unit
    unit: str
    checked: str  # the date the figure was read, ISO
    confirmed: str  # where: vendor, secondary or unconfirmed (prices.json says what each means)
    source: str
    note: str


def load_prices(path: Path = PRICES_FILE) -> dict[str, Price]:
    return {key: Price(**row) for key, row in json.loads(path.read_text())["prices"].items()}


@dataclass(frozen=True)
class BilledInvocation:
    state: str  # the task state that invoked the function
    seconds: float
    memory_mb: int
    architecture: str  # arm64 or x86_64, as the function is deployed

    @property
    def gb_seconds(self) -> float:
        return math.ceil(self.seconds * 1000) / 1000 * self.memory_mb / 1024


@dataclass(frozen=True)
class RunUsage:
    """What one run used, as AWS meters it."""
    requests: Counter[Request]  # sent by the functions (the engine's invocations are not here)
    state_transitions: int  # states entered, plus retries
    executions: int
    invocations: tuple[BilledInvocation, ...]  # Step Functions', each attempt
    api_invocations: int  # API Gateway's: requests only, no history times them
    waits: int  # Wait states entered and build waits parked: each build wait one look at a running build
    tokens: int  # task tokens handed out: a review waiting for a person
    build_seconds: tuple[float, ...]  # each test build
    stored_bytes: int  # in S3 under the run's prefix
    log_bytes: int  # CloudWatch Logs ingestion, as billed
    checkpoint_bytes: int  # the tasks' outputs: what a durable execution would checkpoint
    history_bytes: int  # the execution's history: a workflow engine's record of the run
    hours: float  # the execution, start to end


@dataclass(frozen=True)
class KeeperPass:
    """One pass of the review keeper with one review pending: what keeps a waiting review alive."""
    requests: Counter[Request]
    invocation: BilledInvocation


@dataclass(frozen=True)
class Line:
    service: str  # a key of SERVICE_NAMES (or the service id, if unnamed)
    item: str
    quantity: float
    price: str | None  # a key of the price table; None for a service with no price row
    usd: float  # for one run


def priced(prices: dict[str, Price], service: str, item: str, quantity: float, price: str) -> Line:
    return Line(service, item, quantity, price, quantity * prices[price].usd)


def workflow_lines(usage: RunUsage, prices: dict[str, Price]) -> list[Line]:
    """Every cost of one run but its test builds' minutes."""
    lines = [priced(prices, "sfn", "state transitions", usage.state_transitions, "sfn-state-transition"),
             priced(prices, "lambda", "invocations (Step Functions and API Gateway)",
                    len(usage.invocations) + usage.api_invocations, "lambda-request")]
    for architecture in sorted({invocation.architecture for invocation in usage.invocations}):
        gb_seconds = sum(invocation.gb_seconds for invocation in usage.invocations
                         if invocation.architecture == architecture)
        lines.append(priced(prices, "lambda", f"GB-seconds ({architecture})", gb_seconds,
                            f"lambda-gb-second-{architecture}"))
    lines.extend(_request_lines(usage.requests, prices))
    builds = len(usage.build_seconds)
    publishes = _sent(usage.requests, "sns", "Publish")
    lines += [
        priced(prices, "s3", "GB kept a month", usage.stored_bytes / GB, "s3-storage-gb-month"),
        priced(prices, "kms", "requests (grant encrypted, decrypted by the build; SNS data keys)",
               _sent(usage.requests, "ssm", "PutParameter") + builds + publishes, "kms-request"),
        priced(prices, "apigateway", "REST requests", usage.api_invocations, "apigateway-rest-request"),
        priced(prices, "xray", "traces (each API request, each execution)", usage.api_invocations + usage.executions,
               "xray-trace-recorded"),
        priced(prices, "cloudwatch-logs", "GB of log lines ingested", usage.log_bytes / GB,
               "cloudwatch-logs-ingestion-gb"),
    ]
    return lines


def review_week_lines(keeper: KeeperPass, prices: dict[str, Price]) -> list[Line]:
    """A review pending for a week: every pass of the keeper in that week, each one as measured
    with that review alone pending (with more pending, a pass's invocation is shared)."""
    invocation = keeper.invocation
    per_pass = [priced(prices, "lambda", "keeper invocation", 1, "lambda-request"),
                priced(prices, "lambda", f"GB-seconds ({invocation.architecture})", invocation.gb_seconds,
                       f"lambda-gb-second-{invocation.architecture}"),
                *_request_lines(keeper.requests, prices)]
    return [Line(line.service, line.item, line.quantity * KEEPER_PASSES_A_WEEK, line.price,
                 line.usd * KEEPER_PASSES_A_WEEK) for line in per_pass]


def build_lines(usage: RunUsage, prices: dict[str, Price]) -> list[Line]:
    """The test builds' minutes, rounded up per build."""
    minutes = sum(math.ceil(seconds / 60) for seconds in usage.build_seconds)
    return [priced(prices, "codebuild-builds", f"billed minutes of {len(usage.build_seconds)} build(s), "
                   "BUILD_GENERAL1_SMALL", minutes, "codebuild-general1-small-minute")]


def _request_lines(requests: Counter[Request], prices: dict[str, Price]) -> list[Line]:
    by_price: Counter[tuple[str, str | None]] = Counter()
    for request, number in requests.items():
        if request.service in REQUEST_PRICES:
            exceptions, default = REQUEST_PRICES[request.service]
            by_price[request.service, exceptions.get(request.operation, default)] += number
        else:
            by_price[request.service, None] += number
    return [Line(service, "requests, not priced", number, None, 0.0) if price is None
            else priced(prices, service, f"{prices[price].unit}s" + ("" if prices[price].usd else " (not billed)"),
                        number, price)
            for (service, price), number in sorted(by_price.items(), key=lambda item: (item[0][0], str(item[0][1])))]


def _sent(requests: Counter[Request], service: str, operation: str) -> int:
    return sum(number for request, number in requests.items()
               if (request.service, request.operation) == (service, operation))


def unpriced(lines: list[Line]) -> list[str]:
    return sorted({line.service for line in lines if line.price is None})


def by_service(lines: list[Line]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for line in lines:
        totals[line.service] = totals.get(line.service, 0.0) + line.usd
    return totals


@dataclass(frozen=True)
class Alternative:
    engine: str
    bills: str  # what it bills for this run, in words
    usd: float  # orchestration of one run


def alternatives(usage: RunUsage, prices: dict[str, Price]) -> list[Alternative]:
    """The run's orchestration on each engine: the work itself (the functions' requests, duration,
    storage, the builds) would be the same on all three and is left out.

    Step Functions: its state transitions, as measured. Lambda durable functions: one durable
    execution; each task invocation becomes a step (each attempt an operation), each Wait a wait,
    each task token a callback; the execution starts once; the orchestrating function is invoked
    again after each wait and callback (a Lambda request each; its replay time is not modelled);
    the steps' outputs are the checkpoint data written, kept the default 14 days. Temporal Cloud:
    one workflow start; each task invocation an activity (each attempt an action), each Wait a
    timer, each review a signal plus a timer for its timeout; no heartbeats, since a workflow waits
    for a signal without one; the history is active storage while the run is open. Its workers'
    compute is yours and is not priced, nor the plan's 10% of usage."""
    steps = len(usage.invocations)
    durable_operations = 1 + steps + usage.waits + usage.tokens
    resumes = usage.waits + usage.tokens
    checkpoint_gb = usage.checkpoint_bytes / GB
    durable = (durable_operations * prices["lambda-durable-operation"].usd
               + resumes * prices["lambda-request"].usd
               + checkpoint_gb * prices["lambda-durable-data-written-gb"].usd
               + checkpoint_gb * DURABLE_RETENTION_DAYS / DAYS_PER_MONTH
               * prices["lambda-durable-data-retained-gb-month"].usd)
    actions = 1 + steps + usage.waits + 2 * usage.tokens
    temporal = (actions * prices["temporal-action"].usd
                + usage.history_bytes / GB * usage.hours * prices["temporal-active-storage-gbh"].usd)
    transitions = usage.state_transitions * prices["sfn-state-transition"].usd
    return [
        Alternative("Step Functions Standard (measured)", f"{usage.state_transitions} state transitions", transitions),
        Alternative("Lambda durable functions (model)",
                    f"{durable_operations} operations, {resumes} resumes, {usage.checkpoint_bytes:,} bytes "
                    "checkpointed", durable),
        Alternative("Temporal Cloud (model)", f"{actions} actions, {usage.history_bytes:,} bytes of history "
                    f"for {usage.hours * 3600:.0f} s", temporal),
    ]


def polls_per_build(build_s: float) -> int:
    """How often verify and execute looked at a build that takes `build_s` when they polled it
    (FORMER_POLL_BOUNDS_S): a quarter of the time waited so far, within the bounds."""
    shortest, longest = FORMER_POLL_BOUNDS_S
    waited, polls = 0.0, 0
    while waited < build_s:
        waited += int(max(shortest, min(longest, waited / 4)))
        polls += 1
    return polls


def goal() -> str:
    return "every service the run calls has a price"


def tables(usage: RunUsage, keeper: KeeperPass, prices: dict[str, Price]) -> list[Table]:
    return [_cost_table(usage, keeper, prices), _alternatives_table(usage, prices)]


def _cost_table(usage: RunUsage, keeper: KeeperPass, prices: dict[str, Price]) -> Table:
    workflow, builds = workflow_lines(usage, prices), build_lines(usage, prices)
    review_week = review_week_lines(keeper, prices)
    checked = max(price.checked for price in prices.values())
    table = Table(f"(h) What a run costs on AWS, by service (the warm run of (b); us-east-1 list prices of {checked})",
                  ["service", "what is billed", "one run ($)", f"{RUNS_AT_SCALE:,} runs ($)"])
    totals = by_service(workflow)
    for service in sorted(totals, key=lambda name: -totals[name]):
        items = "; ".join(f"{_quantity(line.quantity)} {line.item}" for line in workflow if line.service == service)
        table.add(SERVICE_NAMES.get(service, service), items, *_usd(totals[service]))
    workflow_usd, builds_usd = sum(totals.values()), sum(line.usd for line in builds)
    table.add(SUBTOTAL, "", *_usd(workflow_usd))
    for line in builds:
        table.add(SERVICE_NAMES[line.service] + " (apart)", f"{_quantity(line.quantity)} {line.item}", *_usd(line.usd))
    table.add("run with its test builds", "", *_usd(workflow_usd + builds_usd))
    review_week_usd = sum(line.usd for line in review_week)
    table.add("a review pending a week (apart)", f"{KEEPER_PASSES_A_WEEK:,} keeper passes: "
              + "; ".join(f"{_quantity(line.quantity)} {line.item}" for line in review_week), *_usd(review_week_usd))
    missing = unpriced(workflow + review_week)
    services = {line.service for line in workflow + review_week}
    table.target(f"{len(services) - len(missing)} of {len(services)} priced", Target(goal(), not missing))
    largest = max(workflow, key=lambda line: line.usd)
    table.notes.append(
        f"largest line of the workflow: {SERVICE_NAMES.get(largest.service, largest.service)} "
        f"{largest.item}, ${largest.usd:.6f} a run ({_share(largest.usd, workflow_usd)} of it); the test builds "
        f"are {builds_usd / workflow_usd:.1f}x the workflow" if workflow_usd else "the workflow cost nothing")
    table.notes.extend(_build_wait_notes(usage, prices, workflow_usd))
    table.notes.append(
        f"the review wait: its token task must hear a heartbeat every {REVIEW_HEARTBEAT_SECONDS // 60} minutes, and "
        f"the review keeper sends one for each pending review every {REVIEW_KEEPER_INTERVAL_MINUTES} minutes, "
        f"{KEEPER_PASSES_A_WEEK:,} in a week. "
        "SendTaskHeartbeat is no state transition and Step Functions does not bill it; a week costs the keeper's "
        f"passes, ${review_week_usd:.6f} ({ratio(review_week_usd, workflow_usd)} the workflow), measured with one "
        f"review pending ({keeper.invocation.seconds:.3f} s a pass, an upper bound; with many pending, each pass's "
        "invocation is shared and its reads are per review)")
    advanced = prices["ssm-advanced-parameter-month"]
    table.notes.append(
        "each build's output grant is an Intelligent-Tiering SecureString: the standard tier (no charge) while "
        f"it is at most 4 KB with no policies, else an advanced parameter at ${advanced.usd:.2f} a month, "
        f"prorated by the hour (${advanced.usd / HOURS_PER_MONTH:.6f} for the hour or less it lives: the first "
        "look after its build ends deletes it); priced here at the standard tier")
    metric = prices["cloudwatch-custom-metric-month"]
    table.notes.append(f"EMF metrics reach CloudWatch in the log lines, so cost no request: each metric name and "
                       f"dimension set is ${metric.usd:.2f} a month, whatever the runs (the stack's, not a run's)")
    if missing:
        table.notes.append(f"NOT PRICED (no row in tests/bench/prices.json): {', '.join(missing)}")
    table.notes.append(
        f"measured: {usage.state_transitions} transitions, {len(usage.invocations)} + {usage.api_invocations} "
        f"invocations (Step Functions + API), {len(usage.build_seconds)} build(s) of "
        f"{', '.join(f'{seconds:.1f}' for seconds in usage.build_seconds)} s, {usage.stored_bytes:,} bytes in S3, "
        f"{usage.log_bytes:,} bytes of logs. Lambda time is Step Functions' (an upper bound); the API's is not "
        "timed; DynamoDB at one request unit a request (a floor); how it is counted: tests/bench/cost.py")
    unconfirmed = sorted(key for key, price in prices.items() if price.confirmed == "unconfirmed")
    table.notes.append(f"prices not confirmed on the vendor's page when checked: {', '.join(unconfirmed)}")
    return table


def _build_wait_notes(usage: RunUsage, prices: dict[str, Price], workflow_usd: float) -> list[str]:
    """What waiting for a build costs: a look is the parked task, the stage's task again and its
    Choice, with their invocations and the one of the build's end. A build's end answers its parked
    task, so a build is looked at once however long it runs; polled, as before, it was looked at
    every few seconds to every 30 s, which on CodeBuild, where builds take minutes, added up."""
    if not usage.waits:
        return []
    looks = [invocation for invocation in usage.invocations if invocation.state in LOOK_STATES]
    per_look = (TRANSITIONS_PER_LOOK * prices["sfn-state-transition"].usd + 3 * prices["lambda-request"].usd
                + sum(invocation.gb_seconds * prices[f"lambda-gb-second-{invocation.architecture}"].usd
                      for invocation in looks) / max(len(looks), 1))
    polls = polls_per_build(CODEBUILD_BUILD_S)
    builds = max(len(usage.build_seconds), 1)
    waited_usd, polling_usd = usage.waits * per_look, builds * polls * per_look
    minutes_usd = math.ceil(CODEBUILD_BUILD_S / 60) * builds * prices["codebuild-general1-small-minute"].usd
    return [f"waiting for the builds: {usage.waits} looks here, ${waited_usd:.6f} "
            f"({_share(waited_usd, workflow_usd)} of the workflow), the same for a build of seconds or of hours: its "
            f"end (CodeBuild's state-change event) wakes its stage. Polled, as before, a {CODEBUILD_BUILD_S // 60}-"
            f"minute build was looked at {polls} times: ${polls * per_look:.6f} a build, ${polling_usd:.6f} a run of "
            f"{builds} build(s), {ratio(polling_usd, waited_usd)} what its waits cost now (against ${minutes_usd:.4f} "
            "of build minutes)"]


def _alternatives_table(usage: RunUsage, prices: dict[str, Price]) -> Table:
    table = Table("(h) The same run's orchestration on Lambda durable functions and Temporal Cloud "
                  "(a model from published prices, not a measurement)",
                  ["engine", "what it bills for this run", "one run ($)", f"{RUNS_AT_SCALE:,} runs ($)"])
    for alternative in alternatives(usage, prices):
        table.add(alternative.engine, alternative.bills, *_usd(alternative.usd))
    table.notes.append(
        "the work itself (the functions' requests and duration, storage, the builds) is the same on all three and "
        "left out. Assumed: each Step Functions task attempt is a durable step or a Temporal activity attempt, "
        "each Wait a durable wait or a Temporal timer, each review a durable callback or a Temporal signal plus "
        "its timeout timer; no heartbeats on either (a callback or a signal needs none); durable functions "
        "invoke the orchestrator again after each wait (replay time not modelled) and keep its checkpoints 14 "
        "days; Temporal's workers are yours to pay for, its plan adds 10% of usage (not included)")
    table.notes.append(
        f"prices: durable functions ${prices['lambda-durable-operation'].usd * 1e6:.2f} per million operations "
        f"({prices['lambda-durable-operation'].confirmed}: {prices['lambda-durable-operation'].source}), "
        f"Temporal Cloud ${prices['temporal-action'].usd * 1e6:.2f} per million actions "
        f"({prices['temporal-action'].confirmed}: {prices['temporal-action'].source})")
    return table


def _usd(one_run: float) -> tuple[str, str]:
    return f"{one_run:.6f}", f"{one_run * RUNS_AT_SCALE:.3f}"


def _quantity(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.3g}"


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"
