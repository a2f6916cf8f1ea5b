"""Run in its own process by test_handler_imports: decorate a handler as the functions' are, with
tracing on as in Lambda, invoke it twice, and print as JSON whether the X-Ray SDK was loaded
before the first invocation and each trace entity the handler sent."""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace
from typing import Any

import boto3
from botocore.stub import Stubber

from agentledger.config import FunctionSettings
from agentledger.handlers.wiring import lambda_handler


@lambda_handler(FunctionSettings)
def probe(event: dict[str, Any], context: Any, settings: FunctionSettings) -> dict[str, Any]:
    client = boto3.client("sqs")  # made inside the invocation, as the assembly makes the functions' clients
    with Stubber(client) as stubbed:
        stubbed.add_response("list_queues", {})
        client.list_queues()
    return {}


class SentEntities:
    """Stands in for the UDP emitter to the X-Ray daemon: keeps what would be sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_entity(self, entity: Any) -> None:
        self.sent.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address: str | None) -> None:
        pass


def main() -> None:
    loaded_before = "aws_xray_sdk" in sys.modules
    from aws_xray_sdk.core import xray_recorder  # noqa: PLC0415 — only after the check above

    emitter = SentEntities()
    xray_recorder.emitter = emitter
    context = SimpleNamespace(function_name="probe", memory_limit_in_mb=128, aws_request_id="request",
                              invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:probe")
    for _ in range(2):
        probe({"run_id": "run-1"}, context)
    print(json.dumps({"xray_loaded_before_first_invocation": loaded_before, "sent": emitter.sent}))


if __name__ == "__main__":
    main()
