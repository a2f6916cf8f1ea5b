"""The restart assessment (first state) and the failure classifier (every Catch)."""
from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from .events import FailureEvent, StageEvent
from .wiring import lambda_handler, logger, workflow


@lambda_handler(StageEvent)
def assess(event: StageEvent, context: LambdaContext) -> dict[str, Any]:
    result = workflow().assess(event.run_id, event.execution)
    logger.info("restart assessed", extra={"next": result["next"], "reason": result["reason"]})
    return result


@lambda_handler(FailureEvent)
def classify(event: FailureEvent, context: LambdaContext) -> dict[str, Any]:
    result = workflow().classify(event.run_id, event.execution, event.error, event.failed_stage)
    logger.warning("failure classified", extra={"error": event.error.get("Error"), "action": result["action"]})
    return result
