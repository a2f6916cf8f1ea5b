"""Every member of moto's that the local runtime replaces, in one place: which member, the
signature of moto's own that its replacement is written against, and what replaces it. The
replacements live with what they serve: dynamodb_lock (atomic conditional writes), moto_fixes
(where moto behaves unlike AWS), moto_scale (where it keeps or does far more than AWS),
lambda_bridge (the Lambda runtime), throttles (refused calls) and codebuild (the build runner).

They are written against moto 5.2.5, which pyproject.toml pins: tests/integration/test_moto_seams.py
fails, naming the member, when an upgrade removes one of these or changes its signature.

Each installer returns an undo that puts back what was in place before it, so installs nest."""
from __future__ import annotations

import copy
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

import moto.dynamodb.models as dynamodb_models
from moto.awslambda.models import LambdaFunction
from moto.codebuild import responses as codebuild_responses
from moto.codebuild.models import CodeBuildBackend
from moto.codebuild.responses import CodeBuildResponse
from moto.core.botocore_stubber import BotocoreStubber
from moto.core.common_models import BaseModel
from moto.core.serialize import BaseJSONSerializer
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.backend.execution import Execution
from moto.stepfunctions.parser.models import StepFunctionsParserBackend

from . import codebuild, dynamodb_lock, lambda_bridge, moto_fixes, moto_scale

if TYPE_CHECKING:
    from collections.abc import Callable

    from .codebuild import LocalCodeBuild
    from .throttles import ThrottleSwitchboard


@dataclass(frozen=True)
class Seam:
    """A member of moto's (a method of one of its classes, or what one of its modules holds) that
    the local runtime replaces."""

    owner: type | ModuleType
    name: str
    # moto's own member as its replacement expects it: a callable's parameters as inspect.signature
    # writes them, without annotations; a module's name.
    expected: str
    # moto's own member, taken when this module is imported: before anything replaced it (every
    # replacement goes through a seam). None if moto has no such member.
    moto_own: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "moto_own", vars(self.owner).get(self.name))

    def __str__(self) -> str:
        if isinstance(self.owner, ModuleType):
            return f"{self.owner.__name__}.{self.name}"
        return f"{self.owner.__module__}.{self.owner.__qualname__}.{self.name}"

    def replace(self, replacement: Any) -> Callable[[], None]:
        """Put `replacement` in the member's place; the returned undo puts back what was there."""
        current = vars(self.owner)[self.name]
        setattr(self.owner, self.name, replacement)
        return lambda: setattr(self.owner, self.name, current)

    def wrap(self, replacement_for: Callable[[Any], Any]) -> Callable[[], None]:
        """Put `replacement_for(what is in the member's place)` there; the returned undo puts that back."""
        return self.replace(replacement_for(vars(self.owner)[self.name]))


# DynamoDB: the backend's item operations, each run holding one lock (dynamodb_lock). moto 5.2.5's
# backend leaves the batch and transactional reads to its responses (the methods do nothing):
# held all the same, so an upgrade that gives them a body changes their signature and is noticed.
TRANSACT_WRITE_ITEMS = Seam(DynamoDBBackend, "transact_write_items", "(self, transact_items)")
DYNAMODB_ITEM_OPERATIONS = (
    Seam(DynamoDBBackend, "put_item", "(self, table_name, item_attrs, expected=None, condition_expression=None, "
         "expression_attribute_names=None, expression_attribute_values=None, overwrite=False, "
         "return_values_on_condition_check_failure=None)"),
    Seam(DynamoDBBackend, "update_item", "(self, table_name, key, update_expression, expression_attribute_names, "
         "expression_attribute_values, attribute_updates=None, expected=None, condition_expression=None, "
         "return_values_on_condition_check_failure=None)"),
    Seam(DynamoDBBackend, "delete_item", "(self, table_name, key, expression_attribute_names=None, "
         "expression_attribute_values=None, condition_expression=None, "
         "return_values_on_condition_check_failure=None)"),
    Seam(DynamoDBBackend, "get_item", "(self, table_name, keys, projection_expressions=None)"),
    Seam(DynamoDBBackend, "query", "(self, table_name, hash_key_dict, range_comparison, range_value_dicts, limit, "
         "exclusive_start_key, scan_index_forward, projection_expressions, index_name=None, consistent_read=False, "
         "expr_names=None, expr_values=None, filter_expression=None, hash_key_conditions=None, "
         "range_key_conditions=None, **filter_kwargs)"),
    Seam(DynamoDBBackend, "scan", "(self, table_name, filters, limit, exclusive_start_key, filter_expression, "
         "expr_names, expr_values, index_name, consistent_read, projection_expression, segments)"),
    TRANSACT_WRITE_ITEMS,
    Seam(DynamoDBBackend, "transact_get_items", "(self)"),
    Seam(DynamoDBBackend, "batch_write_item", "(self)"),
    Seam(DynamoDBBackend, "batch_get_item", "(self)"),
)
# The `copy` module as moto's DynamoDB models use it: transact_write_items deep-copies tables with it.
DYNAMODB_MODELS_COPY = Seam(dynamodb_models, "copy", f"module {copy.__name__}")
TABLE_QUERY = Seam(Table, "query", "(self, hash_key, range_comparison, range_objs, limit, exclusive_start_key, "
                   "scan_index_forward, projection_expressions, index_name=None, consistent_read=False, "
                   "filter_expression=None, hash_key_conditions=None, range_key_conditions=None, **filter_kwargs)")
# Every model object moto creates.
MODEL_NEW = Seam(BaseModel, "__new__", "(cls, *args, **kwargs)")
# The serializer of every JSON-protocol response.
SERIALIZE_STRUCTURE = Seam(BaseJSONSerializer, "_serialize_type_structure", "(self, serialized, value, shape, key)")

# Step Functions' interpreter.
WAIT_FOR_HEARTBEAT = Seam(StateTaskServiceCallback, "_wait_for_task_token_heartbeat",
                          "(self, env, callback_endpoint, heartbeat_endpoint)")
GET_EXECUTIONS = Seam(StepFunctionsParserBackend, "_get_executions", "(self, execution_status=None)")
NOTIFY_HEARTBEAT = Seam(CallbackEndpoint, "notify_heartbeat", "(self)")
STOP_EXECUTION = Seam(Execution, "stop", "(self, stop_date, error, cause)")
SET_PROGRAM_ERROR = Seam(Environment, "set_error", "(self, error)")
PARSE_DEFINITION = Seam(AmazonStateLanguageParser, "parse", "(definition)")
LAMBDA_TASK_ERROR = Seam(StateTaskLambda, "_from_error", "(self, env, ex)")
LAMBDA_TASK_CLIENT = Seam(lambda_eval_utils, "boto_client_for", "(region, service, state_credentials=None)")

# Lambda: what runs an invocation (a Docker container, in moto).
INVOKE_LAMBDA = Seam(LambdaFunction, "_invoke_lambda", "(self, event=None)")

# moto's handler of every request a mocked client sends (botocore's before-send).
HANDLE_REQUEST = Seam(BotocoreStubber, "__call__", "(self, event_name, request, **kwargs)")

# CodeBuild.
START_BUILD = Seam(CodeBuildResponse, "start_build", "(self)")
BATCH_GET_BUILDS = Seam(CodeBuildBackend, "batch_get_builds", "(self, ids)")
STOP_BUILD = Seam(CodeBuildBackend, "stop_build", "(self, build_id)")
VALIDATE_SOURCE = Seam(codebuild_responses, "_validate_required_params_source", "(source)")

SEAMS = (*DYNAMODB_ITEM_OPERATIONS, DYNAMODB_MODELS_COPY, TABLE_QUERY, MODEL_NEW, SERIALIZE_STRUCTURE,
         WAIT_FOR_HEARTBEAT, GET_EXECUTIONS, NOTIFY_HEARTBEAT, STOP_EXECUTION, SET_PROGRAM_ERROR, PARSE_DEFINITION,
         LAMBDA_TASK_ERROR, LAMBDA_TASK_CLIENT,
         INVOKE_LAMBDA, HANDLE_REQUEST, START_BUILD, BATCH_GET_BUILDS, STOP_BUILD, VALIDATE_SOURCE)


def install_corrections() -> Callable[[], None]:
    """moto's DynamoDB made atomic, and corrected where it behaves unlike AWS or keeps and does
    far more than AWS; the returned undo gives moto back its own ways."""
    with ExitStack() as undo:
        # First: moto_scale's transaction takes the lock around moto's, already serialized.
        for operation in DYNAMODB_ITEM_OPERATIONS:
            undo.callback(operation.wrap(dynamodb_lock.serialized))
        undo.callback(WAIT_FOR_HEARTBEAT.wrap(moto_fixes.answered_task_token_is_not_lost))
        undo.callback(GET_EXECUTIONS.wrap(moto_fixes.answers_reach_their_task_while_executions_start))
        undo.callback(NOTIFY_HEARTBEAT.wrap(moto_fixes.a_heartbeat_is_taken_once_the_token_exists))
        undo.callback(LAMBDA_TASK_ERROR.wrap(moto_fixes.a_refused_invoke_is_a_lambda_error))
        undo.callback(STOP_EXECUTION.wrap(moto_fixes.a_stop_ends_the_execution_wherever_it_waits))
        undo.callback(SET_PROGRAM_ERROR.wrap(moto_fixes.a_stopped_execution_stays_stopped))
        undo.callback(MODEL_NEW.replace(staticmethod(moto_scale.untracked_model)))
        undo.callback(DYNAMODB_MODELS_COPY.wrap(moto_scale.tables_are_not_copied_for_transactions))
        undo.callback(TRANSACT_WRITE_ITEMS.wrap(moto_scale.transactions_back_up_only_what_they_write))
        undo.callback(TABLE_QUERY.wrap(moto_scale.queries_read_only_their_partition))
        undo.callback(SERIALIZE_STRUCTURE.wrap(moto_scale.attribute_values_are_sent_as_stored))
        undo.callback(LAMBDA_TASK_CLIENT.wrap(moto_scale.lambda_tasks_share_one_client))
        undo.callback(PARSE_DEFINITION.wrap(moto_scale.definitions_are_parsed_once))
        return undo.pop_all().close


def run_invocations_here(slots: lambda_bridge.InvocationSlots) -> Callable[[], None]:
    """moto's Lambda invocations run by the real handlers, in this process (lambda_bridge), at
    most as many at once as `slots` allows; the returned undo gives moto its own runner back."""
    return INVOKE_LAMBDA.replace(lambda_bridge.invoker(slots))


def answer_throttles(switchboard: ThrottleSwitchboard) -> Callable[[], None]:
    """The switchboard in front of moto's handling of every request; the returned undo takes it away."""
    return HANDLE_REQUEST.wrap(switchboard.in_front_of)


def run_builds(runner: LocalCodeBuild, runs_project: Callable[[str], bool]) -> Callable[[], None]:
    """`runner` runs the builds of the projects `runs_project` claims; any other project's builds
    go to whatever handled them before (another runner, or moto), so runners nest. The returned
    undo puts that back, then stops the runner's builds."""
    with ExitStack() as undo:
        undo.callback(runner.shutdown)
        undo.callback(START_BUILD.wrap(
            lambda elsewhere: runner.build_starter(runs_project, elsewhere, in_moto=START_BUILD.moto_own)))
        undo.callback(BATCH_GET_BUILDS.replace(codebuild.batch_get_builds))
        undo.callback(STOP_BUILD.wrap(runner.build_stopper))
        undo.callback(VALIDATE_SOURCE.wrap(codebuild.source_check))
        return undo.pop_all().close
