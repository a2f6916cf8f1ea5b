"""Invocations share one process locally, so they run in bounded slots (infra/agentledger/local/lambda_bridge):
time spent waiting for a slot is not the function's, a function that itself runs past its timeout
still times out, and the API never waits behind stage work nor answers one request with another's."""
from __future__ import annotations

import io
import json
import threading
import time
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.stack_driver import OPERATOR

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.integration
PROBE_MODULE = Path(__file__).with_name("slot_probe.py")
PROBE_TIMEOUT_S = 1
STAGE_HANDLER = "agentledger.handlers.stages.inspect"


@pytest.fixture(scope="module")
def probe(runtime) -> Iterator[str]:
    """A function with a one-second timeout, deployed next to the stack's and sharing its slots."""
    lambda_client = runtime.client("lambda")
    role = lambda_client.get_function_configuration(FunctionName=runtime.function_name(STAGE_HANDLER))["Role"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.write(PROBE_MODULE, "tests/integration/slot_probe.py")
    name = f"slot-probe-{uuid.uuid4().hex[:8]}"
    lambda_client.create_function(FunctionName=name, Runtime="python3.11", Role=role, Timeout=PROBE_TIMEOUT_S,
                                  Handler="tests.integration.slot_probe.report", Code={"ZipFile": code.getvalue()})
    yield name
    lambda_client.delete_function(FunctionName=name)


def invoke(runtime, function: str, event: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    response = runtime.client("lambda").invoke(FunctionName=function, Payload=json.dumps(event))
    return json.loads(response["Payload"].read()), response.get("FunctionError")


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_an_invocation_that_waited_for_a_slot_still_has_its_whole_timeout(runtime, probe):
    slots, results = runtime.invocation_slots, []
    with slots.slot(runtime.function_name(STAGE_HANDLER)):  # a stage invocation holds the shared slot
        waiting = threading.Thread(target=lambda: results.append(invoke(runtime, probe, {})))
        waiting.start()
        until(lambda: slots.waiting(probe) == 1, "the probe never queued for the slot")
        time.sleep(PROBE_TIMEOUT_S * 1.5)  # it waits longer than its whole timeout
    waiting.join(timeout=30)
    [(payload, error)] = results
    assert error is None, payload
    assert payload["remaining_ms_at_start"] > PROBE_TIMEOUT_S * 1000 * 0.5


def test_a_function_that_returns_after_its_timeout_has_timed_out(runtime, probe):
    payload, error = invoke(runtime, probe, {"stay_s": PROBE_TIMEOUT_S + 0.5})
    assert error is not None
    assert (payload["errorType"], payload["errorMessage"]) == (
        "Sandbox.Timedout", f"Task timed out after {PROBE_TIMEOUT_S:.2f} seconds")


def test_the_api_answers_while_stage_work_holds_the_shared_slot(runtime):
    with runtime.invocation_slots.slot(runtime.function_name(STAGE_HANDLER)):
        assert runtime.call_api("GET", "/runs", caller=OPERATOR).status == 200


def test_concurrent_api_requests_are_each_answered_for_themselves(runtime):
    # The api function's router keeps the request it serves in class attributes: requests served
    # side by side in one process would be answered for each other.
    unknown = [f"run-{uuid.uuid4().hex[:20]}" for _ in range(24)]
    with ThreadPoolExecutor(max_workers=len(unknown)) as pool:
        answers = list(pool.map(lambda run_id: runtime.call_api("GET", f"/runs/{run_id}", caller=OPERATOR), unknown))
    statuses = [(a.status, run_id in a.json()["message"]) for a, run_id in zip(answers, unknown, strict=False)]
    assert statuses == [(404, True)] * 24
