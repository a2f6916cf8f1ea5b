"""Runs Lambda invocations that moto receives with the real handler, in this process.

moto would start a Docker container; there is no Docker here. moto_seams puts a runner in place
of `LambdaFunction._invoke_lambda` (invoker), which resolves the handler named in the
function's configuration inside the code asset the stack deployed, applies that function's
environment and a context whose remaining time follows the configured timeout, and reports
errors in the shape the Lambda runtime uses, which is what Step Functions matches Retry and
Catch on.

Invocations run in slots. On AWS each runs in a sandbox of its own; here all of them share one
process and its interpreter lock, so CPU-bound invocations gain nothing by running together: two
at once each take twice as long and finish no sooner (measured: 50 concurrent runs reached review
in 70 s with one stage slot and with two), and a function that finishes after its
timeout has timed out (issue 14: with 30 concurrent runs, creates ran past the API's 29 s and
review requests past their 20 s). So, as Lambda's account concurrency bounds invocations, the
stage functions share a bounded number of slots; an invocation past the bound waits for one, and
its timeout starts when it gets it, because a sandbox's clock starts when the function starts. A
function with slots reserved for it runs in those alone and never waits behind stage work: the
API, whose caller is a person, and the review keeper, whose pass grows with the reviews pending.
With one slot for the stage functions and one each for those two, no function runs two
invocations at once, which keeps its module state to one invocation as a sandbox does
(duplicates run one after the other here, where on AWS two sandboxes would overlap): Powertools'
REST resolver holds the current request in class attributes, so two API requests at once were
answered for each other (measured: creates with fresh Idempotency-Keys answered 409 "still in
progress")."""
from __future__ import annotations

import importlib
import io
import json
import sys
import threading
import time
import traceback
import uuid
import zipfile
from collections import deque
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from agentledger.deploy import lambda_code_root
from agentledger.faults import SimulatedCrash

from . import environ, invocation_metrics, output

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from moto.awslambda.models import LambdaFunction

FUNCTIONS_DIR = lambda_code_root()


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


class _FifoSlots:
    """A counting semaphore that hands a freed slot to its longest waiter, so invocations start in
    the order they were made (threading.Semaphore lets a newcomer take a freed slot first)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a concurrency limit is at least 1, not {size}")
        self._free = size
        self._waiters: deque[threading.Event] = deque()
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def acquire(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()  # the slot passes to it without ever being free
            else:
                self._free += 1


class InvocationSlots:
    """`shared` slots for every function without slots of its own (Lambda's account concurrency),
    and the slots reserved for a function (its reserved concurrency)."""

    def __init__(self, shared: int) -> None:
        self._shared = _FifoSlots(shared)
        self._reserved: dict[str, _FifoSlots] = {}

    def reserve(self, function_name: str, slots: int) -> None:
        self._reserved[function_name] = _FifoSlots(slots)

    def waiting(self, function_name: str) -> int:
        """How many invocations wait for a slot that `function_name` would run in."""
        return self._slots_of(function_name).waiting

    @contextmanager
    def slot(self, function_name: str) -> Iterator[None]:
        slots = self._slots_of(function_name)
        slots.acquire()
        try:
            yield
        finally:
            slots.release()

    def _slots_of(self, function_name: str) -> _FifoSlots:
        return self._reserved.get(function_name, self._shared)


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
        raise HandlerResolutionError("Runtime.MalformedHandlerName",
                                     f"Bad handler '{function.handler}': not module.function")
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
        raise HandlerResolutionError("Runtime.ImportModuleError",
                                     f"Unable to import module '{module_name}': {error}") from error
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise HandlerResolutionError("Runtime.HandlerNotFound",
                                     f"Handler '{attribute}' missing on module '{module_name}'")
    return handler


def _error_payload(error_type: str, message: str, request_id: str, trace: list[str] | None = None) -> str:
    return json.dumps({"errorType": error_type, "errorMessage": message, "requestId": request_id,
                       "stackTrace": trace or []})


def invoke(function: LambdaFunction, event: Any, slots: InvocationSlots) -> tuple[str, bool, str]:
    with slots.slot(function.function_name):  # the wait is not the function's: its clock starts inside
        return _run(function, event)


def _run(function: LambdaFunction, event: Any) -> tuple[str, bool, str]:
    context = LocalLambdaContext(
        function_name=function.function_name, function_version=str(function.version),
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
    with environ.lambda_environment(variables), output.captured() as stdout, invocation_metrics.own_metrics():
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
        result = _error_payload(error_type, f"Task timed out after {context.timeout_s:.2f} seconds",
                                context.aws_request_id)
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


def invoker(slots: InvocationSlots) -> Callable[[LambdaFunction, str | None], tuple[str, bool, str]]:
    """What runs moto's Lambda invocations here, in place of `LambdaFunction._invoke_lambda`, at
    most as many at once as `slots` allows."""
    def _invoke_lambda(self: LambdaFunction, event: str | None = None) -> tuple[str, bool, str]:
        return invoke(self, event if event is not None else {}, slots)

    return _invoke_lambda


def install() -> Callable[[], None]:
    """Handlers import and print as in the Lambda runtime; the returned undo leaves sys.path and
    the output streams as they were."""
    with ExitStack() as undo:
        undo.callback(output.install())
        undo.callback(_functions_importable())
        undo.callback(invocation_metrics.install())
        return undo.pop_all().close
