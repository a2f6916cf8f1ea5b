"""Where moto 5.2.5 behaves unlike AWS in a way this project depends on, the local runtime
corrects it, each with the behaviour AWS has: each function here takes moto's own member and
returns what moto_seams puts in its place."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from moto.stepfunctions.parser.api import HistoryEventType, LambdaFunctionFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
    StateTaskServiceLambda,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

if TYPE_CHECKING:
    from collections.abc import Callable

    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda
    from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend


def answered_task_token_is_not_lost(original: Callable[..., Any]) -> Callable[..., Any]:
    """AWS accepts SendTaskSuccess as soon as the task has its token, even while the Lambda that
    received the token is still running. moto, when the state has HeartbeatSeconds, starts
    waiting for a heartbeat without first looking at an answer that already arrived, so an early
    approval sits unseen until the heartbeat window (15 minutes here) ends."""
    def wait(self: Any, env: Any, callback_endpoint: Any, heartbeat_endpoint: Any) -> Any:
        early = callback_endpoint.get_outcome()
        if early is not None:
            return early
        return original(self, env, callback_endpoint, heartbeat_endpoint)

    return wait


def answers_reach_their_task_while_executions_start(original: Callable[..., Any]) -> Callable[..., Any]:
    """SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat look through the executions for the
    one holding the token. moto asks each for its evaluation environment, which an execution has
    only once it has parsed its definition, so while one is starting, an answer to any task it
    is asked before (and to a task already over) fails with an AttributeError instead (seen: the
    review keeper's heartbeats failing while new runs started). An execution without an
    environment yet holds no task token: it is passed over."""
    def executions(self: StepFunctionsParserBackend, execution_status: Any = None) -> list[Any]:
        return [execution for execution in original(self, execution_status)
                if execution.exec_worker is not None and execution.exec_worker.env is not None]

    return executions


def a_heartbeat_is_taken_once_the_token_exists(original: Callable[..., Any]) -> Callable[..., Any]:
    """AWS takes SendTaskHeartbeat for any task token it handed out. moto sends the token (the
    task's message) before it sets up the task's heartbeat clock, and until then answers a
    heartbeat with InvalidToken (seen: a heartbeat sent as soon as the token arrived, on loaded
    cores). The clock starts when it is set up, so a heartbeat before it is taken and changes
    nothing."""
    def notify_heartbeat(self: CallbackEndpoint) -> bool:
        return original(self) if self._heartbeat_endpoint is not None else True

    return notify_heartbeat


# How long a stop waits for an execution that is still starting to have a program to stop.
STOP_WAITS_FOR_START_S = 10.0


def a_stop_ends_the_execution_wherever_it_waits(original: Callable[..., Any]) -> Callable[..., Any]:
    """AWS stops an execution at once (StopExecution), wherever it is. moto marks its program
    stopped, but a task waiting for its token with a heartbeat (a review, a parked build) notices
    only at its next heartbeat, up to its whole heartbeat window later; and an execution still
    starting has no program yet, so the stop fails with an AttributeError, or has one not yet
    running, which the stop passes over. Here the stop waits (a bounded while) for the program to
    run, then wakes every task of the execution that waits for a token,
    which finds its program stopped and ends (a_stopped_execution_stays_stopped keeps the error its
    wait ends with from turning the stopped execution into a failed one)."""
    def stop(self: Any, stop_date: Any, error: Any, cause: Any) -> Any:
        deadline = time.monotonic() + STOP_WAITS_FOR_START_S
        while (self.exec_worker is None or self.exec_worker.env is None
               or self.exec_worker.env.program_state() is None) and time.monotonic() < deadline:
            time.sleep(0.05)
        result = original(self, stop_date, error, cause)
        environment = self.exec_worker.env if self.exec_worker is not None else None
        if environment is not None:
            for endpoint in list(environment.callback_pool_manager._pool.values()):  # noqa: SLF001 — moto keeps no other list
                endpoint.interrupt_all()
        return result

    return stop


def a_stopped_execution_stays_stopped(original: Callable[..., Any]) -> Callable[..., Any]:
    """On AWS a stopped execution is ABORTED for good: nothing that was under way when it stopped
    changes that. moto records any later error in a stopped program as its failure."""
    def set_error(self: Any, error: Any) -> None:
        if not isinstance(self.program_state(), ProgramStopped):
            original(self, error)

    return set_error


def a_refused_invoke_is_a_lambda_error(original: Callable[..., Any]) -> Callable[..., Any]:
    """When Lambda refuses an Invoke (TooManyRequestsException at its concurrency limit), AWS fails
    a task whose resource is the function's ARN with `Lambda.<error code>`, as it does a
    `lambda:invoke` task, so one Retry rule covers both. moto names it `Exception` for the former,
    which no Retry of a state machine written for AWS matches. The error is named as moto's own
    `lambda:invoke` names it."""
    def from_error(self: StateTaskLambda, env: Any, ex: Exception) -> FailureEvent:
        if not isinstance(ex, ClientError):
            return original(self, env, ex)
        error, cause = StateTaskServiceLambda._error_cause_from_client_error(ex)
        failed = LambdaFunctionFailedEventDetails(error=error, cause=cause)
        # moto declares every key of EventDetails required, and builds it with one key itself.
        details = EventDetails(lambdaFunctionFailedEventDetails=failed)  # type: ignore[typeddict-item]
        return FailureEvent(env=env, error_name=CustomErrorName(error),
                            event_type=HistoryEventType.LambdaFunctionFailed, event_details=details)

    return from_error
