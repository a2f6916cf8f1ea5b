"""Runs Lambda invocations that moto receives with the real handler, in this process.

moto would start a Docker container; there is no Docker here. The seam
`LambdaFunction._invoke_lambda` is replaced by a runner that resolves the handler named in the
function's configuration inside the code asset the stack deployed, applies that function's
environment and a context whose remaining time follows the configured timeout, and reports
errors in the shape the Lambda runtime uses, which is what Step Functions matches Retry and
Catch on."""
from __future__ import annotations

import importlib
import io
import json
import sys
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from moto.awslambda.models import LambdaFunction

from agentledger.faults import SimulatedCrash

from . import environ, output

FUNCTIONS_DIR = Path(__file__).resolve().parents[2] / "functions"


@dataclass
class LocalLambdaContext:
    function_name: str
    function_version: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_s: int
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = ""
    _started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self._started)) * 1000))


@lru_cache(maxsize=64)
def _asset_modules(code_sha: str, code_bytes: bytes) -> frozenset[str]:
    with zipfile.ZipFile(io.BytesIO(code_bytes)) as archive:
        return frozenset(archive.namelist())


class HandlerResolutionError(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def resolve_handler(function: LambdaFunction) -> Any:
    module_name, _, attribute = (function.handler or "").rpartition(".")
    if not module_name or not attribute:
        raise HandlerResolutionError("Runtime.MalformedHandlerName", f"Bad handler '{function.handler}': not module.function")
    module_file = module_name.replace(".", "/") + ".py"
    if not function.code_bytes:
        raise HandlerResolutionError("Runtime.ImportModuleError", f"function {function.function_name} has no code")
    if module_file not in _asset_modules(function.code_sha_256, function.code_bytes):
        raise HandlerResolutionError(
            "Runtime.ImportModuleError",
            f"Unable to import module '{module_name}': No module named '{module_name}' in the deployed code asset")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise HandlerResolutionError("Runtime.ImportModuleError", f"Unable to import module '{module_name}': {error}") from error
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise HandlerResolutionError("Runtime.HandlerNotFound", f"Handler '{attribute}' missing on module '{module_name}'")
    return handler


def _error_payload(error_type: str, message: str, request_id: str, trace: list[str] | None = None) -> str:
    return json.dumps({"errorType": error_type, "errorMessage": message, "requestId": request_id,
                       "stackTrace": trace or []})


def invoke(function: LambdaFunction, event: Any) -> tuple[str, bool, str]:
    context = LocalLambdaContext(
        function_name=function.function_name, function_version=function.version,
        invoked_function_arn=function.function_arn, memory_limit_in_mb=int(function.memory_size),
        timeout_s=int(function.timeout),
        log_group_name=f"/aws/lambda/{function.function_name}", log_stream_name="local",
    )
    variables = {
        **{k: str(v) for k, v in (function.environment_vars or {}).items()},
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_LAMBDA_FUNCTION_VERSION": str(function.version),
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,
        "_HANDLER": function.handler or "",
    }
    started = time.monotonic()
    error_type: str | None = None
    output.wrap_streams()  # again: a test runner may have swapped sys.stdout since the last invocation
    with environ.lambda_environment(variables), output.captured() as stdout:
        try:
            handler = resolve_handler(function)
            payload = event if not isinstance(event, str) else json.loads(event or "{}")
            result = json.dumps(handler(payload, context))
        except HandlerResolutionError as error:
            error_type, result = error.error_type, _error_payload(error.error_type, str(error), context.aws_request_id)
        except SimulatedCrash as crash:
            # What Step Functions sees when a Lambda process dies mid-invocation.
            error_type = "Runtime.ExitError"
            result = _error_payload(error_type, f"RequestId: {context.aws_request_id} Error: Runtime exited "
                                    f"without providing a reason ({crash})", context.aws_request_id)
        except Exception as error:  # noqa: BLE001 — the Lambda runtime reports any handler error this way
            error_type = type(error).__name__
            result = _error_payload(error_type, str(error), context.aws_request_id,
                                    traceback.format_exception(error)[-6:])
    elapsed = time.monotonic() - started
    if error_type is None and elapsed > context.timeout_s:
        error_type = "Sandbox.Timedout"
        result = _error_payload(error_type, f"Task timed out after {context.timeout_s:.2f} seconds", context.aws_request_id)
    lines = [line for line in stdout.getvalue().splitlines() if line.strip()]
    _ship_logs(function, context, lines)
    return result, error_type is not None, ""


def _ship_logs(function: LambdaFunction, context: LocalLambdaContext, lines: list[str]) -> None:
    """Into the function's log group, where `agentledger metrics` reads the EMF records back."""
    if not lines:
        return
    group = (getattr(function, "logging_config", None) or {}).get("LogGroup") or context.log_group_name
    backend = function.logs_backend
    backend.ensure_log_group(group)
    stream = f"{time.strftime('%Y/%m/%d')}/[{function.version}]{context.aws_request_id}"
    backend.create_log_stream(group, stream)
    now = int(time.time() * 1000)
    backend.put_log_events(group, stream, [{"timestamp": now, "message": line} for line in lines])


def _functions_importable() -> Callable[[], None]:
    """Handlers import as the Lambda runtime imports them: from the root of the code asset."""
    entry = str(FUNCTIONS_DIR)
    if entry in sys.path:
        return lambda: None
    sys.path.insert(0, entry)

    def forget() -> None:
        if entry in sys.path:
            sys.path.remove(entry)

    return forget


def install() -> Callable[[], None]:
    """Serve moto's Lambda invocations here; the returned undo gives moto its own runner back
    and leaves sys.path and the output streams as they were."""
    with ExitStack() as undo:
        undo.callback(output.install())
        undo.callback(_functions_importable())
        original = LambdaFunction._invoke_lambda

        def _invoke_lambda(self: LambdaFunction, event: str | None = None) -> tuple[str, bool, str]:
            return invoke(self, event if event is not None else {})

        LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
        undo.callback(setattr, LambdaFunction, "_invoke_lambda", original)
        return undo.pop_all().close
