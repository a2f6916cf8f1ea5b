"""The local Step Functions answers a waiting task as AWS does while other executions start: a
review's heartbeat or approval must not fail because another run is just beginning."""
from __future__ import annotations

import json
import time
import types
import uuid

import pytest
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

from agentledger.local.runtime import LocalRuntime

pytestmark = pytest.mark.integration
ROLE = "arn:aws:iam::123456789012:role/scratch-state-machine"


def test_a_waiting_task_is_answered_while_other_executions_start(runtime):
    sfn, sqs = runtime.client("stepfunctions"), runtime.client("sqs")
    name = uuid.uuid4().hex[:8]
    queue = sqs.create_queue(QueueName=f"tokens-{name}")["QueueUrl"]
    # Created first, so its executions are looked through first for the token; and long enough a
    # definition that each of them spends a while parsing it as it starts.
    steps = [f"step {n}" for n in range(60)]
    starting = sfn.create_state_machine(name=f"starts-{name}", roleArn=ROLE, definition=json.dumps({
        "StartAt": steps[0], "States": {step: {"Type": "Pass", **({"Next": steps[n + 1]} if n + 1 < len(steps) else
                                                                   {"End": True})}
                                        for n, step in enumerate(steps)}}))
    execution, token = _waiting_for_an_answer(sfn, sqs, queue, f"waits-{name}")

    for n in range(10):
        sfn.start_execution(stateMachineArn=starting["stateMachineArn"], name=f"starts-{n}")
        sfn.send_task_heartbeat(taskToken=token)
    sfn.send_task_success(taskToken=token, output=json.dumps({"answered": True}))

    assert _finished(sfn, execution) == ("SUCCEEDED", {"answered": True})


def _waiting_for_an_answer(sfn, sqs, queue: str, name: str) -> tuple[str, str]:
    """An execution of a one-state machine that sends its task token to the queue and waits, with
    a heartbeat clock; the execution and its token."""
    waiting = sfn.create_state_machine(name=name, roleArn=ROLE, definition=json.dumps({
        "StartAt": "Wait for an answer", "States": {"Wait for an answer": {
            "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "HeartbeatSeconds": 600,
            "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}}, "End": True}}}))
    execution = sfn.start_execution(stateMachineArn=waiting["stateMachineArn"], name=name)["executionArn"]
    return execution, _token(sqs, queue)


def _token(sqs, queue: str) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []):
            return json.loads(message["Body"])["token"]
    raise AssertionError("the waiting task sent no token")


def _finished(sfn, execution: str) -> tuple[str, object]:
    deadline = time.monotonic() + 30
    while True:
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING" or time.monotonic() > deadline:
            return described["status"], json.loads(described.get("output") or "null")
        time.sleep(0.1)


def test_a_heartbeat_sent_as_soon_as_the_token_arrives_is_taken(runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto sends the token before it sets up the task's heartbeat clock; a slow set-up (loaded
    cores) is made slower here, so the heartbeat lands in between, as the review keeper's can."""
    set_up = CallbackEndpoint.setup_heartbeat_endpoint

    def slow_set_up(self, heartbeat_seconds):
        time.sleep(1.5)
        return set_up(self, heartbeat_seconds)

    monkeypatch.setattr(CallbackEndpoint, "setup_heartbeat_endpoint", slow_set_up)
    sfn, sqs = runtime.client("stepfunctions"), runtime.client("sqs")
    name = uuid.uuid4().hex[:8]
    queue = sqs.create_queue(QueueName=f"tokens-{name}")["QueueUrl"]
    execution, token = _waiting_for_an_answer(sfn, sqs, queue, f"beats-{name}")

    sfn.send_task_heartbeat(taskToken=token)
    sfn.send_task_success(taskToken=token, output=json.dumps({"answered": True}))

    assert _finished(sfn, execution) == ("SUCCEEDED", {"answered": True})


def test_stopping_the_runtime_while_an_execution_is_still_starting_stops_the_others(
        runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto cannot stop an execution whose thread has not built its environment yet (an
    AttributeError, which made `serve` exit without stopping its builds, then hang on them);
    the runtime's stop asks every running execution to stop all the same."""
    sfn, sqs = runtime.client("stepfunctions"), runtime.client("sqs")
    name = uuid.uuid4().hex[:8]
    queue = sqs.create_queue(QueueName=f"tokens-{name}")["QueueUrl"]
    waiting, _ = _waiting_for_an_answer(sfn, sqs, queue, f"settles-{name}")
    logic = ExecutionWorker._execution_logic

    def slow_start(self):
        time.sleep(2)
        return logic(self)

    monkeypatch.setattr(ExecutionWorker, "_execution_logic", slow_start)
    machine = sfn.describe_execution(executionArn=waiting)["stateMachineArn"]
    starting = sfn.start_execution(stateMachineArn=machine, name="starting")["executionArn"]
    asked: list[str] = []
    stop = sfn.stop_execution

    def recorded_stop(**arguments):
        asked.append(arguments["executionArn"])
        return stop(**arguments)

    monkeypatch.setattr(sfn, "stop_execution", recorded_stop)
    stack = types.SimpleNamespace(state_machine_arn=machine, client=runtime.client)

    LocalRuntime._wait_for_executions_to_settle(stack)  # type: ignore[arg-type]

    assert sorted(asked) == sorted([waiting, starting])
