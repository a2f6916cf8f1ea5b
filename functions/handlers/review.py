"""The review wait: record the task token, and keep pending reviews honest."""
from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from agentledger.models import Stage

from .stages import stage_handler
from .wiring import logger, metrics, tracer, workflow

request = stage_handler(Stage.AWAIT_REVIEW)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def keep_alive(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Scheduled: heartbeat every review that still stands, and fail the task of any whose
    plan went stale so the run replans instead of waiting for an approval it must refuse."""
    result = workflow().keep_reviews_alive()
    logger.info("pending reviews checked", extra=result)
    return result
