"""One handler per work stage; the state machine calls each from its own state."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from agentledger.config import BuildSettings, WorkflowSettings
from agentledger.models import Stage

from .events import StageEvent
from .wiring import assembly, lambda_handler, logger

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def stage_handler(stage: Stage, settings: type[WorkflowSettings] = WorkflowSettings) -> Handler:
    def handle(event: StageEvent, context: LambdaContext, loaded: WorkflowSettings) -> dict[str, Any]:
        logger.append_keys(stage=stage.value, execution=event.execution)
        outcome = assembly.workflow(loaded).run_stage(stage, event.run_id, event.execution, event.task_token)
        logger.info("stage finished", extra={"outcome": outcome})
        return outcome

    # Named before it is decorated: the decorator records the settings under the handler's name.
    handle.__name__ = stage.value
    return lambda_handler(settings, StageEvent)(handle)


inspect = stage_handler(Stage.INSPECT)
plan = stage_handler(Stage.PLAN)
execute = stage_handler(Stage.EXECUTE, BuildSettings)
verify = stage_handler(Stage.VERIFY, BuildSettings)
complete = stage_handler(Stage.COMPLETE)
