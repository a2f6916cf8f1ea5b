"""The restart assessment (first state) and the failure classifier (every Catch)."""
from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from .events import FailureEvent, StageEvent
from .wiring import logger, metrics, tracer, workflow


@logger.inject_lambda_context(correlation_id_path="run_id", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=StageEvent)
def assess(event: StageEvent, context: LambdaContext) -> dict[str, Any]:
    result = workflow().assess(event.run_id, event.execution)
    logger.info("restart assessed", extra={"next": result["next"], "reason": result["reason"]})
    return result


@logger.inject_lambda_context(correlation_id_path="run_id", clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=FailureEvent)
def classify(event: FailureEvent, context: LambdaContext) -> dict[str, Any]:
    result = workflow().classify(event.run_id, event.execution, event.error, event.failed_stage)
    logger.warning("failure classified", extra={"error": event.error.get("Error"), "action": result["action"]})
    return result
