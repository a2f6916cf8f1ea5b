"""The review wait: record the task token, and keep pending reviews honest."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentledger.config import KeeperSettings, ReviewRequestSettings

from .events import StageEvent
from .wiring import assembly, lambda_handler, logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@lambda_handler(ReviewRequestSettings, StageEvent)
def request(event: StageEvent, context: LambdaContext, settings: ReviewRequestSettings) -> dict[str, Any]:
    """Register the review (its task token binds it to this plan), then tell the reviewers."""
    outcome, entry = assembly.workflow(settings).request_review(event.run_id, event.execution, event.task_token)
    notified = assembly.effects(settings).deliver(event.run_id, event.execution, "review_notification", context,
                                                  entry)
    logger.info("review requested", extra={"outcome": outcome, "notification": notified})
    return outcome


@lambda_handler(KeeperSettings, correlation_id_path=None)
def keep_alive(event: dict[str, Any], context: LambdaContext, settings: KeeperSettings) -> dict[str, Any]:
    """Scheduled: heartbeat every review that still stands, and fail the task of any whose
    plan went stale so the run replans instead of waiting for an approval it must refuse."""
    result = assembly.workflow(settings).keep_reviews_alive()
    logger.info("pending reviews checked", extra=result)
    return result
