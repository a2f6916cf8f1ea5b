"""Every external write the state machine asks for (Open pull request, Open ticket, Announce completion)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentledger.config import EffectSettings

from .events import EffectEvent
from .wiring import assembly, lambda_handler, logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@lambda_handler(EffectSettings, EffectEvent)
def deliver(event: EffectEvent, context: LambdaContext, settings: EffectSettings) -> dict[str, Any]:
    outcome = assembly.effects(settings).deliver(event.run_id, event.execution, event.effect, context)
    logger.info(f"effect {outcome['status']}", extra={"outcome": outcome})  # confirmed, skipped or rate_limited
    return outcome
