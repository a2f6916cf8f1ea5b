"""Where moto 5.2.5 behaves unlike AWS in a way this project depends on, the local runtime
corrects it here, each with the behaviour AWS has."""
from __future__ import annotations

import base64
import json
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

from moto.s3.responses import S3Response
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.models import StepFunctionsParserBackend


def _answered_task_token_is_not_lost() -> Callable[[], None]:
    """AWS accepts SendTaskSuccess as soon as the task has its token, even while the Lambda that
    received the token is still running. moto, when the state has HeartbeatSeconds, starts
    waiting for a heartbeat without first looking at an answer that already arrived, so an early
    approval sits unseen until the heartbeat window (15 minutes here) ends."""
    original = StateTaskServiceCallback._wait_for_task_token_heartbeat
    if getattr(original, "__agentledger_fixed__", False):
        return lambda: None

    def wait(self: Any, env: Any, callback_endpoint: Any, heartbeat_endpoint: Any) -> Any:
        early = callback_endpoint.get_outcome()
        if early is not None:
            return early
        return original(self, env, callback_endpoint, heartbeat_endpoint)

    wait.__agentledger_fixed__ = True  # type: ignore[attr-defined]
    StateTaskServiceCallback._wait_for_task_token_heartbeat = wait  # type: ignore[method-assign]

    def uninstall() -> None:
        StateTaskServiceCallback._wait_for_task_token_heartbeat = original  # type: ignore[method-assign]

    return uninstall


def _answers_reach_their_task_while_executions_start() -> Callable[[], None]:
    """SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat look through the executions for the
    one holding the token. moto asks each for its evaluation environment, which an execution has
    only once it has parsed its definition, so while one is starting, an answer to any task it
    is asked before (and to a task already over) fails with an AttributeError instead (seen: the
    review keeper's heartbeats failing while new runs started). An execution without an
    environment yet holds no task token: it is passed over."""
    original = StepFunctionsParserBackend._get_executions

    def executions(self: StepFunctionsParserBackend, execution_status: Any = None) -> list[Any]:
        return [execution for execution in original(self, execution_status)
                if execution.exec_worker is not None and execution.exec_worker.env is not None]

    StepFunctionsParserBackend._get_executions = executions  # type: ignore[method-assign]

    def uninstall() -> None:
        StepFunctionsParserBackend._get_executions = original  # type: ignore[method-assign]

    return uninstall


def _post_policies_are_enforced() -> Callable[[], None]:
    """S3 accepts a browser-form POST only if its policy is unexpired and met: the key, the bucket
    and the size within content-length-range. moto stores whatever is posted, so an upload grant
    would bind nothing locally (another key, any size)."""
    original = S3Response._bucket_response_post

    def post(self: S3Response, request: Any, bucket_name: str) -> Any:
        form = {name: values[0] for name, values in self.querystring.items() if values}
        if "policy" in form:
            problem = _policy_problem(form, bucket_name, len(self.body or b""))
            if problem:
                return 403, {"Content-Type": "application/xml"}, (
                    f"<Error><Code>AccessDenied</Code><Message>{problem}</Message></Error>")
        return original(self, request, bucket_name)

    S3Response._bucket_response_post = post  # type: ignore[method-assign]

    def uninstall() -> None:
        S3Response._bucket_response_post = original  # type: ignore[method-assign]

    return uninstall


def _policy_problem(form: dict[str, str], bucket: str, size: int) -> str | None:
    # Not its signature: moto authenticates no S3 request, so a forged policy proves nothing more
    # than a plain PUT would. What a grant binds is checked: expiry, bucket, key and size.
    document = json.loads(base64.b64decode(form["policy"]))
    if datetime.fromisoformat(document["expiration"].replace("Z", "+00:00")) < datetime.now(UTC):
        return "Invalid according to Policy: Policy expired."
    values = {**form, "bucket": bucket}
    for condition in document.get("conditions", []):
        if isinstance(condition, dict):
            [(name, wanted)] = condition.items()
            if values.get(name) != wanted:
                return f"Invalid according to Policy: Policy Condition failed: [\"eq\", \"${name}\", \"{wanted}\"]"
        elif condition[0] == "content-length-range":
            if not condition[1] <= size <= condition[2]:
                return "Your proposed upload exceeds the maximum allowed size" if size > condition[2] \
                    else "Your proposed upload is smaller than the minimum allowed size"
        elif condition[0] == "eq" and values.get(condition[1].lstrip("$")) != condition[2] or condition[0] == "starts-with" and not values.get(condition[1].lstrip("$"), "").startswith(condition[2]):
            return f"Invalid according to Policy: Policy Condition failed: {json.dumps(condition)}"
    return None


def install() -> Callable[[], None]:
    """Apply every correction; the returned undo gives moto back its own behaviour."""
    with ExitStack() as undo:
        undo.callback(_answered_task_token_is_not_lost())
        undo.callback(_post_policies_are_enforced())
        undo.callback(_answers_reach_their_task_while_executions_start())
        return undo.pop_all().close
