"""The payloads the state machine sends to each task (Powertools Parser models)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentledger.states import EFFECTS


class StageEvent(BaseModel):
    run_id: str = Field(min_length=1)
    execution: str = Field(min_length=1)
    task_token: str | None = None


class EffectEvent(StageEvent):
    effect: str

    @field_validator("effect")
    @classmethod
    def _known_effect(cls, effect: str) -> str:
        if effect not in EFFECTS:
            raise ValueError(f"unknown effect {effect!r}; known: {', '.join(EFFECTS)}")
        return effect


class FailureEvent(StageEvent):
    error: dict[str, Any]
    failed_stage: str | None = None  # the stage whose state failed ("assess" for the assessment)
