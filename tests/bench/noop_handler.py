"""A Lambda handler that does no work, for the bare-engine measurement: deployed for every task of
the state machine and loaded with what the real functions answered in a recorded run, so the
engine walks the same path with the same payloads while no agentledger code runs.

The local runtime runs handlers in its own process, so the bench loads the script here directly."""
from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .timeline import ReplayStep

_lock = threading.Lock()
_script: deque[ReplayStep] = deque()
_answer: dict[str, Any] = {}  # the Step Functions client and the payload field carrying the task token


def load(steps: list[ReplayStep], stepfunctions: Any, token_field: str) -> None:
    with _lock:
        _script.clear()
        _script.extend(steps)
        _answer.update(client=stepfunctions, token_field=token_field)


def handler(event: dict[str, Any], context: Any) -> Any:
    with _lock:
        step = _script.popleft()
    if step.error is not None:
        raise type(step.error, (Exception,), {})("replayed")
    if step.token_answer is not None:
        # Answered at once, as a reviewer who approves without reading would: the engine's part of
        # a review is handing the token out and taking the answer in.
        _answer["client"].send_task_success(taskToken=event[_answer["token_field"]], output=step.token_answer)
    return step.output
