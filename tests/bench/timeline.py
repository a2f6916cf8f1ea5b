"""What an execution's history says about where its time went, and what its functions answered.

Read from GetExecutionHistory alone, so the same analysis applies to an agentledger run and to the
bare engine replaying it."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentledger.deploy import PROJECT_ROOT
from agentledger.errors import BuildWaitNotNeededError
from agentledger.states import Stage

if TYPE_CHECKING:
    from datetime import datetime

TOKEN_TASK_SUFFIX = ".waitForTaskToken"
# The definition the local stack deploys, and the bare engine replays.
DEFINITION = PROJECT_ROOT / "statemachines" / "run.asl.json"


def stages_of_tasks(definition: dict[str, Any]) -> dict[str, Stage]:
    """The stage each task state works on, as the definition charges its failures to it (the
    failed_stage its Catch hands the classifier): a payload does not name its stage."""
    states: dict[str, dict[str, Any]] = definition["States"]
    charged = {name: states[catch["Next"]].get("Result") for name, state in states.items()
               for catch in state.get("Catch", [])}
    stages = {stage.value for stage in Stage}
    return {name: Stage(result) for name, result in charged.items() if result in stages}


STAGE_OF_TASK = stages_of_tasks(json.loads(DEFINITION.read_text()))
# Token tasks that wait for a test build, not for a person: their time is waiting, as a Wait's was.
BUILD_WAIT_STATES = frozenset(name for name, state in json.loads(DEFINITION.read_text())["States"].items()
                              if state.get("Parameters", {}).get("FunctionName") == "${WatchBuildFunctionArn}")
# What a build wait's invocation raises when the build ended before it parked; replayed as raised.
NOT_NEEDED = BuildWaitNotNeededError.__name__


@dataclass(frozen=True)
class Invocation:
    state: str  # the task state that invoked the function
    stage: str | None  # the effect its payload names, else the stage its state works on, if any
    seconds: float  # scheduled to answered, as Step Functions saw it
    function: str  # the ARN of the function it invoked


@dataclass
class Timeline:
    total_s: float = 0.0
    waiting_s: float = 0.0  # in Wait states and build waits: for an interval or a build, not work
    reviewer_s: float = 0.0  # a task token out with a person, from handing it over to the answer
    states_entered: int = 0
    retries: int = 0  # a task's invocations after its first, on the same entry into its state
    waits: int = 0  # Wait states entered, and build waits parked
    tokens: int = 0  # task tokens handed out: waits for a person
    invocations: list[Invocation] = field(default_factory=list)

    @property
    def working_s(self) -> float:
        """Time the engine or a function was busy: neither waiting on purpose nor on a person."""
        return self.total_s - self.waiting_s - self.reviewer_s

    def invocations_of(self, stage: str) -> list[Invocation]:
        return [invocation for invocation in self.invocations if invocation.stage == stage]

    def seconds_by_state(self) -> dict[str, float]:
        """Time in each task state's invocations, in the order the states first ran."""
        seconds: dict[str, float] = {}
        for invocation in self.invocations:
            seconds[invocation.state] = seconds.get(invocation.state, 0.0) + invocation.seconds
        return seconds


@dataclass(frozen=True)
class ReplayStep:
    """What one Lambda invocation of a recorded run answered; for a token task, also the answer
    the token got (the reviewer's, or the build's end). `error`: the invocation raised it instead
    (a build wait whose build had already ended)."""
    output: Any
    token_answer: str | None = None
    error: str | None = None


def timeline(history: list[dict[str, Any]]) -> Timeline:
    """Of an ended execution's history (its last event is the end)."""
    result = Timeline()
    if history:
        result.total_s = _seconds(history[0]["timestamp"], history[-1]["timestamp"])
    state = ""
    scheduled_in_state = 0
    # What is in flight (a wait, a token or an invocation): since when, its stage, the function it invoked.
    opened: dict[str, tuple[datetime, str | None, str]] = {}
    for event in history:
        kind, at = event["type"], event["timestamp"]
        if kind in ("LambdaFunctionScheduled", "TaskScheduled"):  # an attempt; after the first, a retry
            result.retries += scheduled_in_state > 0
            scheduled_in_state += 1
        if kind.endswith("StateEntered"):
            result.states_entered += 1
            state, scheduled_in_state = event["stateEnteredEventDetails"]["name"], 0
            if kind == "WaitStateEntered":
                result.waits += 1
                opened["wait"] = (at, None, "")
        elif kind == "WaitStateExited":
            result.waiting_s += _seconds(opened.pop("wait")[0], at)
        elif kind == "LambdaFunctionScheduled":
            details = event["lambdaFunctionScheduledEventDetails"]
            opened["invocation"] = (at, _stage(state, json.loads(details.get("input") or "{}")), details["resource"])
        elif kind in ("LambdaFunctionSucceeded", "LambdaFunctionFailed", "LambdaFunctionTimedOut"):
            begun, stage, function = opened.pop("invocation")
            result.invocations.append(Invocation(state, stage, _seconds(begun, at), function))
        elif kind == "TaskScheduled" and _is_token_task(event):
            parameters = json.loads(event["taskScheduledEventDetails"]["parameters"])
            opened["token task"] = (at, _stage(state, parameters.get("Payload")), parameters["FunctionName"])
        elif kind == "TaskSubmitted" and "token task" in opened:
            begun, stage, function = opened.pop("token task")
            result.invocations.append(Invocation(state, stage, _seconds(begun, at), function))
            if state in BUILD_WAIT_STATES:
                result.waits += 1
                opened["build wait"] = (at, stage, function)
            else:
                result.tokens += 1
                opened["token"] = (at, stage, function)
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut") and "build wait" in opened:
            result.waiting_s += _seconds(opened.pop("build wait")[0], at)
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut") and "token" in opened:
            result.reviewer_s += _seconds(opened.pop("token")[0], at)
        elif kind == "TaskFailed" and "token task" in opened:  # its invocation failed: nothing was handed out
            begun, stage, function = opened.pop("token task")
            result.invocations.append(Invocation(state, stage, _seconds(begun, at), function))
    return result


def replay_steps(history: list[dict[str, Any]]) -> list[ReplayStep]:
    """One step per Lambda invocation, in order. Only a run whose invocations all succeeded can be
    replayed: a failure would have to be replayed as the same error, for the same Retry and Catch."""
    steps: list[ReplayStep] = []
    token_step: int | None = None
    for event in history:
        kind = event["type"]
        if kind == "LambdaFunctionSucceeded":
            steps.append(ReplayStep(json.loads(event["lambdaFunctionSucceededEventDetails"]["output"])))
        elif kind == "TaskFailed" and token_step is None and event["taskFailedEventDetails"]["error"] == NOT_NEEDED:
            steps.append(ReplayStep(None, error=NOT_NEEDED))
        elif kind in ("LambdaFunctionFailed", "LambdaFunctionTimedOut", "TaskFailed", "TaskTimedOut"):
            raise ValueError(f"the recorded run has a failed task ({kind}); replay needs one without failures")
        elif kind == "TaskSubmitted" and _is_token_task(event):
            submitted = json.loads(event["taskSubmittedEventDetails"]["output"])
            token_step = len(steps)
            steps.append(ReplayStep(submitted.get("Payload")))
        elif kind == "TaskSucceeded" and token_step is not None:
            answer = event["taskSucceededEventDetails"]["output"]
            steps[token_step] = ReplayStep(steps[token_step].output, answer)
            token_step = None
    return steps


def _is_token_task(event: dict[str, Any]) -> bool:
    details = next((value for key, value in event.items() if key.endswith("EventDetails")), {})
    return str(details.get("resource", "")).endswith(TOKEN_TASK_SUFFIX)


def _stage(state: str, payload: Any) -> str | None:
    if isinstance(payload, dict) and payload.get("effect"):
        return str(payload["effect"])
    stage = STAGE_OF_TASK.get(state)
    return stage.value if stage else None


def _seconds(begun: datetime, ended: datetime) -> float:
    return (ended - begun).total_seconds()
