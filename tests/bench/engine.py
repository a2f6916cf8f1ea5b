"""(c) The bare engine: the same ASL file with a no-op function behind every task, replaying what
the real functions answered in a recorded run, so moto's Step Functions interpreter and the
local Lambda bridge walk the same states with the same payloads while no agentledger code runs.
Comparing the two executions' working time (neither waiting, in Wait states or for a build, nor
with a reviewer) says how much of a run is the engine and how much is agentledger's work."""
from __future__ import annotations

import io
import json
import re
import sys
import time
import uuid
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import noop_handler
from .report import Table, ratio
from .timeline import DEFINITION, Timeline, replay_steps, timeline

if TYPE_CHECKING:
    from agentledger.local.runtime import LocalRuntime

NOOP_MODULE = noop_handler.__name__
TASK_TOKEN = "$$.Task.Token"
TIMEOUT_S = 120
POLL_S = 0.25  # the bench shares the engine's process: looking often would slow what it measures


def replay(runtime: LocalRuntime, recorded: list[dict[str, Any]]) -> Timeline:
    """Run the recorded execution again on the bare engine; its timeline."""
    definition = DEFINITION.read_text()
    function_arn = _deploy_noop_function(runtime)
    machine = runtime.client("stepfunctions").create_state_machine(
        name=f"agentledger-bench-bare-engine-{uuid.uuid4().hex[:8]}",
        definition=re.sub(r"\$\{\w+\}", function_arn, definition),
        roleArn=_role_arn(runtime))["stateMachineArn"]
    noop_handler.load(replay_steps(recorded), runtime.client("stepfunctions"), _token_field(json.loads(definition)))
    started = next(event for event in recorded if event["type"] == "ExecutionStarted")
    execution = runtime.client("stepfunctions").start_execution(
        stateMachineArn=machine, name=f"bare-{uuid.uuid4().hex[:12]}",
        input=started["executionStartedEventDetails"]["input"])["executionArn"]
    status = _wait(runtime, execution)
    if status != "SUCCEEDED":
        raise RuntimeError(f"the bare engine's execution ended {status}")
    return timeline(_history(runtime, execution))


def table(real: Timeline, bare: Timeline) -> Table:
    result = Table("(c) The engine alone against agentledger (the warm run of (b), replayed with no-op functions)",
                   ["", "agentledger", "bare engine", "bare / agentledger"])
    result.add("states entered", real.states_entered, bare.states_entered, "-")
    result.add("Lambda invocations", len(real.invocations), len(bare.invocations), "-")
    result.add("execution, start to end (s)", real.total_s, bare.total_s, "-")
    result.add("  in Wait states and build waits (s)", real.waiting_s, bare.waiting_s, "-")
    result.add("  a review token out with the reviewer (s)", real.reviewer_s, bare.reviewer_s, "-")
    result.add("working time (s)", real.working_s, bare.working_s, ratio(bare.working_s, real.working_s))
    result.add("working time per state entered (ms)", 1000 * real.working_s / max(real.states_entered, 1),
               1000 * bare.working_s / max(bare.states_entered, 1), "-")
    bare_by_state = bare.seconds_by_state()
    for state, seconds in real.seconds_by_state().items():
        bare_seconds = bare_by_state.get(state, 0.0)
        result.add(f"  invoked by {state!r} (s)", seconds, bare_seconds, ratio(bare_seconds, seconds))
    if real.working_s:
        result.notes.append(f"the engine (moto's interpreter and the Lambda bridge) is "
                            f"{100 * bare.working_s / real.working_s:.0f}% of the run's working time; "
                            "agentledger's own work is the rest")
    return result


def _deploy_noop_function(runtime: LocalRuntime) -> str:
    """The no-op handler as a Lambda function whose code asset holds its package, as a real
    function's would (the local runtime checks the handler's module is in the asset)."""
    asset = io.BytesIO()
    with zipfile.ZipFile(asset, "w") as archive:
        parts = NOOP_MODULE.split(".")
        packages = [".".join(parts[:depth]) for depth in range(1, len(parts))]
        for name in [*packages, NOOP_MODULE, Timeline.__module__]:
            source = Path(sys.modules[name].__file__ or "")
            archive.write(source, name.replace(".", "/") + ("/__init__.py" if source.name == "__init__.py" else ".py"))
    return runtime.client("lambda").create_function(
        FunctionName=f"agentledger-bench-noop-{uuid.uuid4().hex[:8]}", Runtime="python3.11",
        Role=_role_arn(runtime), Handler=f"{NOOP_MODULE}.handler", Code={"ZipFile": asset.getvalue()},
        Timeout=60)["FunctionArn"]


def _role_arn(runtime: LocalRuntime) -> str:
    iam = runtime.client("iam")
    name = "agentledger-bench-bare-engine"
    try:
        return iam.get_role(RoleName=name)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {
            "Service": ["lambda.amazonaws.com", "states.amazonaws.com"]}}]}
        return iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]


def _token_field(definition: Any) -> str:
    """The payload field the definition puts the task token in (`task_token.$: $$.Task.Token`)."""
    if isinstance(definition, dict):
        for key, value in definition.items():
            if value == TASK_TOKEN and key.endswith(".$"):
                return key.removesuffix(".$")
        children = list(definition.values())
    else:
        children = definition if isinstance(definition, list) else []
    return next((found for child in children if (found := _token_field(child))), "")


def _wait(runtime: LocalRuntime, execution_arn: str) -> str:
    sfn = runtime.client("stepfunctions")
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        status = sfn.describe_execution(executionArn=execution_arn)["status"]
        if status != "RUNNING":
            return status
        time.sleep(POLL_S)
    raise TimeoutError(f"the bare engine's execution {execution_arn} still runs after {TIMEOUT_S}s")


def _history(runtime: LocalRuntime, execution_arn: str) -> list[dict[str, Any]]:
    pages = runtime.client("stepfunctions").get_paginator("get_execution_history").paginate(executionArn=execution_arn)
    return [event for page in pages for event in page["events"]]
