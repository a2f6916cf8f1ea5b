"""The restart assessment (first state) and the failure classifier (every Catch)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentledger.config import WorkflowSettings

from .events import FailureEvent, StageEvent
from .wiring import assembly, lambda_handler, logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@lambda_handler(WorkflowSettings, StageEvent)
def assess(event: StageEvent, context: LambdaContext, settings: WorkflowSettings) -> dict[str, Any]:
    result = assembly.workflow(settings).assess(event.run_id, event.execution)
    logger.info("restart assessed", extra={"next": result["next"], "reason": result["reason"]})
    return result


@lambda_handler(WorkflowSettings, FailureEvent)
def classify(event: FailureEvent, context: LambdaContext, settings: WorkflowSettings) -> dict[str, Any]:
    result = assembly.workflow(settings).classify(event.run_id, event.execution, event.error, event.failed_stage)
    logger.warning("failure classified", extra={"error": event.error.get("Error"), "action": result["action"]})
    return result
