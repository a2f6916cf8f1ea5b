"""(h) What a run costs on AWS: the usage of (b)'s warm run, measured on the local stack, for the
cost model (tests/bench/cost_model.py) to price.

What is measured, all of (b)'s warm run: the requests the functions sent, by service and operation
(tests/bench/request_counter.py); from the execution's history (tests/bench/timeline.py), the
states entered and the retries (Step Functions bills both as state transitions), each Lambda
invocation with its time and the function it invoked, the Wait states and the task tokens handed
out; each function's memory and architecture, from its deployed configuration; each test build's
time (tests/bench/client.py); the bytes kept in S3 under the run's prefix; the bytes of the log
lines the stack's functions wrote while the run was going; the tasks' outputs and the history's
size, for the alternatives. The test builds' own S3 traffic (the presigned GET of the input, the
POST of the results) is among the requests: the local build sandbox sends it, outside any function.

A review that waits costs what keeps it alive: the review keeper's passes. (b)'s review is
answered at once, so a run of its own stops at review for one pass of the keeper, whose requests
and time are measured with that one review pending, then is approved and followed to its end.

An invocation's time is Step Functions' (scheduled to answered), an upper bound of what the
function itself ran. The API's invocations (the engine's Lambda invocations that are in no
history: API Gateway's) are counted, not timed."""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentledger.artifacts import run_prefix
from agentledger.local.deploy import STACK_NAME
from agentledger.local.runtime import KEEPER_HANDLER, LocalRuntime

from .aws_requests import RequestsMeasurement, engine_invocations
from .client import AWAITING_REVIEW, ENDED, WAITING_ON_A_PERSON, BenchClient, build_durations
from .cost_model import BilledInvocation, KeeperPass, RunUsage
from .request_counter import ENGINE
from .timeline import timeline

if TYPE_CHECKING:
    from pathlib import Path

LOG_EVENT_OVERHEAD_BYTES = 26  # CloudWatch Logs counts each event's message plus 26 bytes
# A function's log lines are written when its handler returns, a moment after its last write to
# the ledger (the run's `updated_at`): the window of the run's logs stays open this long after.
LOG_WINDOW_MARGIN = timedelta(seconds=2)


def measure(runtime: LocalRuntime, client: BenchClient, measured: RequestsMeasurement) -> RunUsage:
    executed = timeline(measured.history)
    functions = _deployed(runtime)
    view = client.view(measured.run.run_id)
    return RunUsage(
        requests=Counter({request: number for request, number in measured.warm.items() if request.function != ENGINE}),
        state_transitions=executed.states_entered + executed.retries,
        executions=measured.shape.executions,
        invocations=tuple(_billed(invocation.state, invocation.seconds, functions[_name(invocation.function)])
                          for invocation in executed.invocations),
        api_invocations=engine_invocations(measured.warm) - len(executed.invocations),
        waits=executed.waits,
        tokens=executed.tokens,
        build_seconds=tuple(build_durations(view)),
        stored_bytes=_stored_bytes(runtime, measured.run.run_id),
        log_bytes=_log_bytes(runtime, [function.log_group for function in functions.values()], view["run"]),
        checkpoint_bytes=_checkpoint_bytes(measured.history),
        history_bytes=len(json.dumps(measured.history, default=str)),
        hours=executed.total_s / 3600,
    )


def measure_review_wait(client: BenchClient, repository: Path, timeout_s: float) -> KeeperPass:
    run_id = client.start(repository)
    run = client.wait_for_one(run_id, WAITING_ON_A_PERSON, timeout_s)
    if run["status"] != AWAITING_REVIEW:
        raise RuntimeError(f"the run started to measure the review keeper went to {run['status']}, not to review")
    with client.requests.counting() as sent:
        started = time.monotonic()
        client.runtime.run_review_keeper()
        seconds = time.monotonic() - started  # the invocation as the caller saw it: an upper bound
    client.approve(run)
    client.wait_for_one(run_id, ENDED, timeout_s)
    keeper = _deployed(client.runtime)[client.runtime.function_name(KEEPER_HANDLER)]
    return KeeperPass(Counter({request: number for request, number in sent.items() if request.function != ENGINE}),
                      _billed("review keeper", seconds, keeper))


@dataclass(frozen=True)
class DeployedFunction:
    memory_mb: int
    architecture: str
    log_group: str


def _billed(state: str, seconds: float, function: DeployedFunction) -> BilledInvocation:
    return BilledInvocation(state, seconds, function.memory_mb, function.architecture)


def _name(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


def _deployed(runtime: LocalRuntime) -> dict[str, DeployedFunction]:
    """Each function as deployed, by its name (a history names it by its ARN). Its architecture is
    the template's: moto's Lambda drops the one CloudFormation passes it, and reports x86_64."""
    assert runtime.stack is not None
    body = runtime.client("cloudformation").get_template(StackName=STACK_NAME)["TemplateBody"]
    resources = (json.loads(body) if isinstance(body, str) else body)["Resources"]
    deployed: dict[str, DeployedFunction] = {}
    for logical, name in runtime.stack.functions.items():
        config = runtime.client("lambda").get_function_configuration(FunctionName=name)
        architectures = resources[logical]["Properties"].get("Architectures") or ["x86_64"]  # Lambda's default
        # Where the local runtime writes the function's log lines, as Lambda does.
        log_group = (config.get("LoggingConfig") or {}).get("LogGroup") or f"/aws/lambda/{name}"
        deployed[name] = DeployedFunction(int(config["MemorySize"]), architectures[0], log_group)
    return deployed


def _stored_bytes(runtime: LocalRuntime, run_id: str) -> int:
    pages = runtime.client("s3").get_paginator("list_objects_v2").paginate(
        Bucket=runtime.output("ArtifactBucketName"), Prefix=run_prefix(run_id))
    return sum(item["Size"] for page in pages for item in page.get("Contents", []))


def _log_bytes(runtime: LocalRuntime, log_groups: list[str], run: dict[str, Any]) -> int:
    """The log events of the stack's functions from the run's creation to its last change: (b)'s
    run is the only one going then."""
    start = int(datetime.fromisoformat(run["created_at"]).timestamp() * 1000)
    end = int((datetime.fromisoformat(run["updated_at"]) + LOG_WINDOW_MARGIN).timestamp() * 1000)
    logs = runtime.client("logs")
    total = 0
    for group in log_groups:
        if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
            continue  # the function wrote nothing yet
        for page in logs.get_paginator("filter_log_events").paginate(logGroupName=group, startTime=start,
                                                                     endTime=end):
            total += sum(len(event["message"].encode()) + LOG_EVENT_OVERHEAD_BYTES for event in page["events"])
    return total


def _checkpoint_bytes(history: list[dict[str, Any]]) -> int:
    outputs = (event.get("lambdaFunctionSucceededEventDetails") or event.get("taskSucceededEventDetails") or {}
               for event in history)
    return sum(len(str(details.get("output", ""))) for details in outputs)
