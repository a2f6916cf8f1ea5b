"""Throttling for the local runtime: the next calls of an AWS operation answered as the service
answers when a quota binds, so the code under test meets the error it would meet on AWS.

The refusal is made where a real one comes from, at the service: the switchboard stands in front
of moto's request handler (botocore's `before-send`), so the caller's botocore parses a real error
response and its own retry handler, or the state machine's Retry when the caller is the Step
Functions engine, decides what happens next. A refused call reaches no backend: it had no effect.

Importing this module loads neither moto nor botocore, so the CLI can name the header that arms a
throttle (`run --throttle SERVICE:OPERATION[:COUNT]`) and still start at once."""
from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from botocore.awsrequest import AWSPreparedRequest, AWSResponse
    from moto.core.botocore_stubber import BotocoreStubber

# The local API's request header that arms a throttle for the run the request creates.
THROTTLE_HEADER = "X-Agentledger-Throttle"


@dataclass(frozen=True)
class ThrottleAnswer:
    """What the service sends when a quota binds: its error code, HTTP status and message."""

    code: str
    status: int
    message: str
    body: dict[str, str] = field(default_factory=dict)  # the error document's other fields

    def response(self, service_id: str, url: str) -> AWSResponse:
        from botocore.awsrequest import AWSResponse  # noqa: PLC0415 — see the module's docstring

        request_id = str(uuid.uuid4())
        if service_id == "lambda":  # REST-JSON: the code is in a header
            headers = {"x-amzn-RequestId": request_id, "x-amzn-ErrorType": self.code,
                       "Content-Type": "application/json"}
            document = {**self.body, "message": self.message}
        else:  # JSON protocol: the code is the document's __type
            headers = {"x-amzn-RequestId": request_id, "Content-Type": "application/x-amz-json-1.1"}
            document = {"__type": self.code, **self.body, "message": self.message}
        # botocore-stubs asks for an HTTPHeaders; AWSResponse wraps any mapping in a HeadersDict
        # (botocore's own Stubber passes a dict).
        return AWSResponse(url, self.status, headers, _Raw(json.dumps(document).encode()))  # type: ignore[arg-type]


class _Raw:
    """The raw stream an AWSResponse reads its body from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


# By boto3 client name: the error each service answers when the quota that binds first under load
# is reached (the messages are AWS's own).
THROTTLES: dict[str, ThrottleAnswer] = {
    # StartExecution, SendTask* and the other control-plane calls past their token bucket.
    "stepfunctions": ThrottleAnswer("ThrottlingException", 400, "Rate exceeded"),
    # Invoke past the function's reserved concurrency (or the account's): a 429.
    "lambda": ThrottleAnswer("TooManyRequestsException", 429, "Rate Exceeded.",
                             {"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded", "Type": "User"}),
    # A partition past its throughput.
    "dynamodb": ThrottleAnswer(
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", 400,
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API."),
    # StartBuild past the account's concurrent builds, its queue full.
    "codebuild": ThrottleAnswer("AccountLimitExceededException", 400,
                                "Cannot have more than 1 builds in queue for the account"),
}
# botocore names the service of a request by its service id, hyphenized ("sfn" for Step Functions).
_SERVICE_IDS = {"stepfunctions": "sfn"}


@cache
def operations(service: str) -> frozenset[str]:
    import botocore.session  # noqa: PLC0415 — see the module's docstring

    return frozenset(botocore.session.get_session().get_service_model(service).operation_names)


def parse_throttle(spec: str) -> tuple[str, str, int]:
    """`service:Operation[:count]` as (service, operation, count); count defaults to 1. A
    ValueError that names what is accepted otherwise."""
    service, _, rest = spec.partition(":")
    operation, _, count_text = rest.partition(":")
    if service not in THROTTLES:
        raise ValueError(f"no throttle for service {service!r} in {spec!r}; known: {', '.join(THROTTLES)}")
    if operation not in operations(service):
        raise ValueError(f"{service} has no operation {operation!r} (as the API names it, e.g. "
                         f"{sorted(operations(service))[0]})")
    try:
        count = int(count_text) if count_text else 1
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"the count in {spec!r} is a whole number of calls, at least 1")
    return service, operation, count


@dataclass
class ArmedThrottle:
    service: str
    operation: str
    remaining: int
    run_id: str | None  # None: any call of the operation
    refused: int = 0
    passed_after: int = 0  # calls let through once it was spent: the retries that got through

    def matches(self, service_id: str, operation: str, body: bytes) -> bool:
        return (_SERVICE_IDS.get(self.service, self.service), self.operation) == (service_id, operation) \
            and (self.run_id is None or _names_run(service_id, body, self.run_id))


def _names_run(service_id: str, body: bytes, run_id: str) -> bool:
    """A call is the run's when its request carries the run's id: a ledger key (RUN#id), an
    execution's input, a build's test-run marker. An invocation is the run's when its event is
    one of the run's stages (the event's run_id), not an API request that mentions the run."""
    if service_id != "lambda":
        return run_id.encode() in body
    try:
        event = json.loads(body or b"null")
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("run_id") == run_id


@dataclass
class ThrottleSwitchboard:
    armed: list[ArmedThrottle] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, spec: str, run_id: str | None = None) -> ArmedThrottle:
        """Refuse the next `count` calls of the operation (of the run's, when `run_id` is given)."""
        service, operation, count = parse_throttle(spec)
        throttle = ArmedThrottle(service, operation, count, run_id)
        with self._lock:
            self.armed.append(throttle)
        return throttle

    def answer(self, service_id: str, operation: str, body: bytes) -> ThrottleAnswer | None:
        """The throttle this call meets, or None to let it through."""
        with self._lock:
            for throttle in self.armed:
                if not throttle.matches(service_id, operation, body):
                    continue
                if throttle.remaining:
                    throttle.remaining -= 1
                    throttle.refused += 1
                    return THROTTLES[throttle.service]
                throttle.passed_after += 1
            return None

    def in_front_of(self, handler: Callable[..., AWSResponse | None]) -> Callable[..., AWSResponse | None]:
        """moto's handler of every request (`BotocoreStubber.__call__`), with the switchboard in
        front of it: what moto_seams puts in its place."""
        def __call__(stubber: BotocoreStubber, event_name: str, request: AWSPreparedRequest,
                     **kwargs: Any) -> AWSResponse | None:
            if stubber.enabled:
                _, service_id, operation = event_name.split(".", 2)  # before-send.<service id>.<operation>
                answer = self.answer(service_id, operation, _body(request))
                if answer is not None:
                    return answer.response(service_id, request.url)
            return handler(stubber, event_name, request, **kwargs)

        return __call__


def _body(request: AWSPreparedRequest) -> bytes:
    body = request.body
    if isinstance(body, bytes):
        return body
    return body.encode() if isinstance(body, str) else b""  # a stream (an upload) names no run
