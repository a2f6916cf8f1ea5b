"""What an execution's history says about where its time went, and what its functions answered.

Read from GetExecutionHistory alone, so the same analysis applies to an agentledger run and to the
bare engine replaying it."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

TOKEN_TASK_SUFFIX = ".waitForTaskToken"
ENDED = ("ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut")


@dataclass(frozen=True)
class Invocation:
    label: str  # the payload's stage or effect, else the function's name
    seconds: float  # scheduled to answered, as Step Functions saw it


@dataclass
class Timeline:
    total_s: float = 0.0
    waiting_s: float = 0.0  # in Wait states: the interval the definition chose, not work
    reviewer_s: float = 0.0  # a task token out with a person, from handing it over to the answer
    states_entered: int = 0
    invocations: list[Invocation] = field(default_factory=list)

    @property
    def working_s(self) -> float:
        """Time the engine or a function was busy: neither waiting on purpose nor on a person."""
        return self.total_s - self.waiting_s - self.reviewer_s

    def invocations_of(self, label: str) -> list[Invocation]:
        return [invocation for invocation in self.invocations if invocation.label == label]

    def invocation_counts(self) -> Counter[str]:
        return Counter(invocation.label for invocation in self.invocations)


@dataclass(frozen=True)
class ReplayStep:
    """What one Lambda invocation of a recorded run answered; for a token task, also the answer
    the token got (the reviewer's)."""
    output: Any
    token_answer: str | None = None


def timeline(history: list[dict[str, Any]]) -> Timeline:
    result = Timeline()
    started: datetime | None = None
    opened: dict[str, tuple[datetime, str]] = {}  # what is in flight: wait, token or invocation
    for event in history:
        kind, at = event["type"], event["timestamp"]
        if kind == "ExecutionStarted":
            started = at
        elif kind.endswith("StateEntered"):
            result.states_entered += 1
            if kind == "WaitStateEntered":
                opened["wait"] = (at, "")
        elif kind == "WaitStateExited":
            result.waiting_s += _seconds(opened.pop("wait")[0], at)
        elif kind == "LambdaFunctionScheduled":
            details = event["lambdaFunctionScheduledEventDetails"]
            opened["invocation"] = (at, _label(details.get("input"), details["resource"]))
        elif kind in ("LambdaFunctionSucceeded", "LambdaFunctionFailed", "LambdaFunctionTimedOut"):
            begun, label = opened.pop("invocation")
            result.invocations.append(Invocation(label, _seconds(begun, at)))
        elif kind == "TaskScheduled" and _is_token_task(event):
            details = event["taskScheduledEventDetails"]
            payload = json.loads(details["parameters"]).get("Payload")
            opened["token task"] = (at, _label(json.dumps(payload), details["resource"]))
        elif kind == "TaskSubmitted" and "token task" in opened:
            begun, label = opened.pop("token task")
            result.invocations.append(Invocation(label, _seconds(begun, at)))
            opened["token"] = (at, label)
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut") and "token" in opened:
            result.reviewer_s += _seconds(opened.pop("token")[0], at)
        if kind in ENDED and started is not None:
            result.total_s = _seconds(started, at)
    if started is not None and not result.total_s and history:
        result.total_s = _seconds(started, history[-1]["timestamp"])
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


def _label(payload: str | None, resource: str) -> str:
    fields = json.loads(payload) if payload else {}
    if isinstance(fields, dict) and (fields.get("stage") or fields.get("effect")):
        return str(fields.get("stage") or fields.get("effect"))
    return resource.rsplit(":", 1)[-1]


def _seconds(begun: datetime, ended: datetime) -> float:
    return (ended - begun).total_seconds()
