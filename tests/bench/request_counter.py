"""Counting the AWS requests the stack's functions send.

Every botocore client in this process gets a `before-send` hook, registered in botocore's built-in
handlers before the local stack creates any session, so the clients the handlers, Powertools'
idempotency layer and its parameters utility create all have it. `before-send` fires once per
HTTP attempt, retries included, with the request as it would go on the wire; moto answers it
after the hook has seen it. A request is a function's when it is sent inside a Lambda
invocation, which the local runtime marks as AWS does: the function's environment, with
`AWS_LAMBDA_FUNCTION_NAME`, is in place for exactly the duration of the handler. What the bench
sends only to watch a run (listing runs, reading one) is sent under `excluded()`. A `lambda:Invoke`
sent outside any function is Step Functions (or API Gateway) invoking a function: the engine's,
reported on its own line and not in the totals.

Not counted, because no function sends them: the test build's own traffic (its presigned GET of
its input and POST of its results, and its log stream: CodeBuild's, priced per build minute),
CloudWatch metrics (EMF lines in the function's log, shipped by Lambda without an API call),
X-Ray segments (UDP to the daemon) and the GitHub receiver's HTTP calls (not AWS).
"""
from __future__ import annotations

import os
import threading
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

import botocore.handlers

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ENGINE = "(Step Functions / API Gateway)"
OUTSIDE_FUNCTIONS = "(outside any function)"
# The services a run's functions send requests to, by botocore's id, as the report names them.
SERVICES = {"dynamodb": "DynamoDB", "s3": "S3", "sfn": "Step Functions", "lambda": "Lambda",
            "codebuild": "CodeBuild", "sns": "SNS", "secrets-manager": "Secrets Manager",
            "cloudwatch": "CloudWatch", "cloudwatch-logs": "CloudWatch Logs", "ssm": "SSM"}


@dataclass(frozen=True)
class Request:
    function: str  # the Lambda function that sent it, or one of the two labels above
    service: str  # botocore's service id, hyphenated: dynamodb, s3, sfn, codebuild, secrets-manager...
    operation: str


class RequestCounter:
    def __init__(self) -> None:
        self._counts: Counter[Request] = Counter()
        self._lock = threading.Lock()
        self._active = False
        self._excluded: ContextVar[bool] = ContextVar("bench_requests_excluded", default=False)

    def install(self) -> Callable[[], None]:
        """Hook every botocore session created from now on; the returned undo unhooks them."""
        entry = ("before-send", self._on_send)
        # First, so it runs before moto's own before-send handler answers the request.
        botocore.handlers.BUILTIN_HANDLERS.insert(0, entry)
        return lambda: botocore.handlers.BUILTIN_HANDLERS.remove(entry)

    def _on_send(self, event_name: str, **_: object) -> None:
        if not self._active or self._excluded.get():
            return
        _, service, operation = event_name.split(".")[:3]
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        if function is None:
            function = ENGINE if (service, operation) == ("lambda", "Invoke") else OUTSIDE_FUNCTIONS
        with self._lock:
            self._counts[Request(function, service, operation)] += 1

    @contextmanager
    def counting(self) -> Iterator[Counter[Request]]:
        """Count from a clean slate while the block runs; the counter it yields stays readable after."""
        counts: Counter[Request] = Counter()
        with self._lock:
            self._counts, self._active = counts, True
        try:
            yield counts
        finally:
            with self._lock:
                self._active = False

    @contextmanager
    def excluded(self) -> Iterator[None]:
        """The bench's own requests in this block (and in handlers it invokes from it) are not the run's."""
        token = self._excluded.set(True)
        try:
            yield
        finally:
            self._excluded.reset(token)

