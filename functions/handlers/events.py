"""The payloads the state machine sends to each task (Powertools Parser models)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agentledger.models import Stage


class StageEvent(BaseModel):
    run_id: str = Field(min_length=1)
    execution: str = Field(min_length=1)
    stage: Stage | None = None
    task_token: str | None = None


class FailureEvent(StageEvent):
    error: dict[str, Any]
