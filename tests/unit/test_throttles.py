"""Throttles as AWS answers them: the local switchboard's arming, the error each answer parses to
in botocore, and the functions' clients retrying and reporting them. No moto: a client's requests
are answered by the switchboard, or else by an empty success, at botocore's `before-send`."""
from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError

from agentledger.adapters.throttling import RETRY_CONFIG, as_transient, report_throttles
from agentledger.errors import TransientError
from agentledger.local.throttles import ThrottleSwitchboard, parse_throttle
from agentledger.restart import classify
from agentledger.states import FailureKind

RUN = "run-0123456789abcdef"
# One call per service that a quota binds on, with the parameters it needs to be sent.
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "stepfunctions": ("start_execution", {"stateMachineArn": "arn:aws:states:us-east-1:1:stateMachine:m",
                                          "name": f"{RUN}-start", "input": json.dumps({"run_id": RUN})}),
    "lambda": ("invoke", {"FunctionName": "stage", "Payload": json.dumps({"run_id": RUN})}),
    "dynamodb": ("put_item", {"TableName": "ledger", "Item": {"pk": {"S": f"RUN#{RUN}"}}}),
    "codebuild": ("start_build", {"projectName": "tests",
                                  "environmentVariablesOverride": [{"name": "T", "value": f"{RUN}/x"}]}),
}
OPERATIONS = {"stepfunctions": "StartExecution", "lambda": "Invoke", "dynamodb": "PutItem",
              "codebuild": "StartBuild"}
EXPECTED = {  # (error code, HTTP status) as the service sends them
    "stepfunctions": ("ThrottlingException", 400),
    "lambda": ("TooManyRequestsException", 429),
    "dynamodb": ("ProvisionedThroughputExceededException", 400),
    "codebuild": ("AccountLimitExceededException", 400),
}


def _served_by(board: ThrottleSwitchboard, service: str, config: Config) -> Any:
    """A client whose requests the switchboard answers first, and an empty success otherwise."""
    client = boto3.client(service, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s",
                          config=config)

    def send(event_name: str, request: Any, **_: Any) -> AWSResponse:
        _, service_id, operation = event_name.split(".", 2)
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
        answer = board.answer(service_id, operation, body)
        if answer is not None:
            return answer.response(service_id, request.url)
        return AWSResponse(request.url, 200, {}, _Body(b"{}"))

    client.meta.events.register_first("before-send", send)
    return client


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


def _call(client: Any, service: str) -> Any:
    method, params = CALLS[service]
    return getattr(client, method)(**params)


@pytest.mark.parametrize("service", sorted(CALLS))
def test_each_throttle_reaches_the_caller_as_the_service_sends_it(service: str) -> None:
    board = ThrottleSwitchboard()
    throttle = board.arm(f"{service}:{OPERATIONS[service]}", RUN)
    client = _served_by(board, service, Config(retries={"total_max_attempts": 1}))

    with pytest.raises(ClientError) as refused:
        _call(client, service)
    assert (refused.value.response["Error"]["Code"],
            refused.value.response["ResponseMetadata"]["HTTPStatusCode"]) == EXPECTED[service]
    assert refused.value.response["Error"]["Message"]
    _call(client, service)  # one call armed: the next goes through
    assert (throttle.refused, throttle.passed_after) == (1, 1)


def test_a_throttle_armed_for_a_run_spares_other_runs_and_other_operations() -> None:
    board = ThrottleSwitchboard()
    throttle = board.arm("dynamodb:PutItem", RUN)
    assert board.answer("dynamodb", "PutItem", b'{"Item": {"pk": {"S": "RUN#another-run"}}}') is None
    assert board.answer("dynamodb", "GetItem", f'{{"Key": {{"pk": {{"S": "RUN#{RUN}"}}}}}}'.encode()) is None
    assert board.answer("dynamodb", "PutItem", f'{{"Item": {{"pk": {{"S": "RUN#{RUN}"}}}}}}'.encode()) is not None
    assert throttle.refused == 1


def test_an_invocation_is_the_runs_when_its_event_is_one_of_the_runs_stages() -> None:
    board = ThrottleSwitchboard()
    board.arm("lambda:Invoke", RUN)
    api_request = json.dumps({"path": f"/runs/{RUN}", "httpMethod": "GET"}).encode()
    assert board.answer("lambda", "Invoke", api_request) is None  # a person reading the run
    assert board.answer("lambda", "Invoke", json.dumps({"run_id": RUN}).encode()) is not None


def test_a_throttle_armed_for_no_run_takes_any_call_of_the_operation() -> None:
    board = ThrottleSwitchboard()
    board.arm("stepfunctions:SendTaskHeartbeat:2")
    answers = [board.answer("sfn", "SendTaskHeartbeat", b"{}") for _ in range(3)]
    assert [answer is not None for answer in answers] == [True, True, False]


@pytest.mark.parametrize(("spec", "parsed"), [
    ("dynamodb:TransactWriteItems", ("dynamodb", "TransactWriteItems", 1)),
    ("codebuild:StartBuild:3", ("codebuild", "StartBuild", 3)),
])
def test_a_throttle_is_named_by_service_operation_and_count(spec: str, parsed: tuple[str, str, int]) -> None:
    assert parse_throttle(spec) == parsed


@pytest.mark.parametrize(("spec", "says"), [
    ("s3:PutObject", "known: stepfunctions, lambda, dynamodb, codebuild"),
    ("dynamodb:put_item", "dynamodb has no operation 'put_item'"),
    ("lambda:Invoke:0", "at least 1"),
    ("lambda:Invoke:two", "at least 1"),
])
def test_a_throttle_that_cannot_be_armed_says_what_can(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_throttle(spec)


def _functions_client(board: ThrottleSwitchboard, service: str) -> tuple[Any, list[tuple[str, str, str]]]:
    """A client configured as the functions' are (handlers/assembly.py), and the throttles it reports."""
    reported: list[tuple[str, str, str]] = []
    return report_throttles(_served_by(board, service, RETRY_CONFIG), lambda *throttled: reported.append(throttled)), \
        reported


def test_the_functions_clients_retry_a_throttle_with_backoff_and_report_each() -> None:
    board = ThrottleSwitchboard()
    throttle = board.arm("dynamodb:PutItem", RUN)
    client, reported = _functions_client(board, "dynamodb")

    response = _call(client, "dynamodb")

    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert (throttle.refused, throttle.passed_after) == (1, 1)
    assert reported == [("dynamodb", "PutItem", "ProvisionedThroughputExceededException")]


def test_a_refused_build_start_is_reported_though_the_sdk_leaves_it_to_the_caller() -> None:
    board = ThrottleSwitchboard()
    board.arm("codebuild:StartBuild", RUN)
    client, reported = _functions_client(board, "codebuild")

    with pytest.raises(ClientError, match="AccountLimitExceededException"):
        _call(client, "codebuild")  # not retried: the build waits for the next poll (workflow/builds.py)
    assert reported == [("codebuild", "StartBuild", "AccountLimitExceededException")]


def test_a_throttle_that_outlasts_the_clients_retries_fails_the_stage_as_a_transient_error() -> None:
    board = ThrottleSwitchboard()
    board.arm("dynamodb:PutItem", RUN)
    client = _served_by(board, "dynamodb", Config(retries={"total_max_attempts": 1}))
    with pytest.raises(ClientError) as refused:
        _call(client, "dynamodb")

    transient = as_transient(refused.value)
    assert transient is not None and "PutItem" in str(transient) and "ProvisionedThroughputExceeded" in str(transient)
    # Retried by the state machine, then classified as retryable: never a person's first.
    assert classify(type(transient).__name__, str(transient), 0, 1).kind == FailureKind.RETRYABLE


def test_an_error_that_is_no_throttle_is_left_as_it_is() -> None:
    refused = ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}}, "PutItem")
    assert as_transient(refused) is None


def test_a_function_whose_call_stayed_throttled_fails_with_the_error_its_state_retries(monkeypatch) -> None:
    from agentledger.config import FunctionSettings  # noqa: PLC0415 — the handlers' stack, only here
    from agentledger.handlers.wiring import lambda_handler  # noqa: PLC0415

    for name, value in {"LEDGER_TABLE_NAME": "ledger", "ARTIFACT_BUCKET_NAME": "artifacts",
                        "AGENTLEDGER_ENVIRONMENT": "test", "AGENTLEDGER_MAX_REPLANS": "1",
                        "AGENTLEDGER_ARCHIVE_MAX_MEMBERS": "10", "AGENTLEDGER_ARCHIVE_MAX_BYTES": "10",
                        "AGENTLEDGER_ARCHIVE_MAX_RATIO": "10"}.items():
        monkeypatch.setenv(name, value)
    board = ThrottleSwitchboard()
    board.arm("dynamodb:PutItem", RUN)
    client = _served_by(board, "dynamodb", Config(retries={"total_max_attempts": 1}))

    @lambda_handler(FunctionSettings)
    def stage(event: dict[str, Any], context: Any, settings: FunctionSettings) -> Any:
        return _call(client, "dynamodb")

    with pytest.raises(TransientError) as failed:
        stage({"run_id": RUN}, SimpleNamespace(function_name="stage", memory_limit_in_mb=128, aws_request_id="r",
                                               invoked_function_arn="arn:aws:lambda:us-east-1:1:function:stage"))
    assert isinstance(failed.value.__cause__, ClientError)
