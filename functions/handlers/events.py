"""The payloads the state machine sends to each task (Powertools Parser models)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class StageEvent(BaseModel):
    run_id: str = Field(min_length=1)
    execution: str = Field(min_length=1)
    task_token: str | None = None


class EffectEvent(StageEvent):
    effect: Literal["review_notification", "ticket", "completion_notification"]


class FailureEvent(StageEvent):
    error: dict[str, Any]
    failed_stage: str | None = None  # the stage whose state failed ("assess" for the assessment)
