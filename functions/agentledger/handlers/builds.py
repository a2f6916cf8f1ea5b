"""A stage's wait for its test build: parked on a task token, answered by the build's end."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field

from agentledger.adapters.codebuild import ENDED_BUILD_STATUSES
from agentledger.config import BuildEndedSettings, BuildWatchSettings
from agentledger.models import Stage
from agentledger.ports import BuildWait

from .events import StageEvent
from .wiring import assembly, lambda_handler, logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


class BuildWatchEvent(StageEvent):
    stage: Literal["execute", "verify"]
    task_token: str = Field(min_length=1)
    poll_after_s: int = Field(ge=1, le=86_400)  # the task's timeout: then it looks at the build itself
    build_id: str | None = Field(max_length=300)  # None: not started yet, waiting for room
    # When the build was asked for (the ledger's UTC time): its place in the queue for room.
    queued_at: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?\+00:00$")


class BuildStateChange(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    build_id: str = Field(alias="build-id", pattern=r"^arn:[^:]+:codebuild:[^:]*:[^:]*:build/[^:]+:[^:]+$")
    # The statuses the adapter names, which pydantic reads at run time; mypy reads no Literal built at run time.
    build_status: Literal[ENDED_BUILD_STATUSES] = Field(alias="build-status")  # type: ignore[valid-type]
    project_name: str = Field(alias="project-name", min_length=1)


class BuildStateChangeEvent(EventBridgeModel):
    detail: BuildStateChange


@lambda_handler(BuildWatchSettings, BuildWatchEvent)
def watch(event: BuildWatchEvent, context: LambdaContext, settings: BuildWatchSettings) -> dict[str, Any]:
    """The state machine's task: park until the stage's build ends (or room frees to start it)."""
    logger.append_keys(stage=event.stage, execution=event.execution)
    wait = BuildWait(event.run_id, Stage(event.stage), event.task_token, event.queued_at, event.build_id)
    parked = assembly.build_parking(settings).park(wait, event.poll_after_s)
    logger.info("build wait", extra=parked)
    return parked


@lambda_handler(BuildEndedSettings, BuildStateChangeEvent, correlation_id_path=None)
def ended(event: BuildStateChangeEvent, context: LambdaContext, settings: BuildEndedSettings) -> dict[str, int]:
    """EventBridge: a test build ended. Its ARN ends in the id StartBuild answered ("project:uuid")."""
    build_id = event.detail.build_id.split(":build/", 1)[1]
    answered = assembly.build_ends(settings).build_ended(build_id)
    logger.info("build ended", extra={"build_id": build_id, "status": event.detail.build_status, **answered})
    return answered
