"""The run state machine, the review keeper's schedule and the rule that wakes stages whose build ended."""

from __future__ import annotations

import json
import re
from typing import get_args

import pytest
from aws_cdk.assertions import Match, Template

from agentledger.adapters.codebuild import BUILD_STATE_CHANGE, ENDED_BUILD_STATUSES
from agentledger.deploy import PROJECT_ROOT
from agentledger.handlers.builds import BuildStateChange
from agentledger.limits import REVIEW_HEARTBEAT_SECONDS, REVIEW_KEEPER_INTERVAL_MINUTES

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]

TASK_FUNCTIONS = [
    "AssessFunction",
    "InspectFunction",
    "PlanFunction",
    "ExecuteFunction",
    "VerifyFunction",
    "WatchBuildFunction",
    "RequestReviewFunction",
    "CompleteFunction",
    "ClassifyFunction",
    "EffectFunction",
]
DEFINITION_FILE = PROJECT_ROOT / "statemachines" / "run.asl.json"


def test_state_machine_is_standard_logged_and_traced_without_execution_data(template: Template, logical_id) -> None:
    """Every event is logged, but not the states' input and output: the review task's parameters
    carry its task token, which would let any reader of the log group decide the review."""
    template.resource_count_is("AWS::StepFunctions::StateMachine", 1)
    log_group = logical_id("AWS::Logs::LogGroup", "ExecutionLogs")
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {
                "Level": "ALL",
                "IncludeExecutionData": False,
                "Destinations": [
                    {"CloudWatchLogsLogGroup": {"LogGroupArn": {"Fn::GetAtt": [log_group, "Arn"]}}}
                ],
            },
        },
    )


def test_substitutions_are_the_task_function_arns(template: Template) -> None:
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "DefinitionSubstitutions": {
                f"{name}Arn": {"Fn::GetAtt": [name, "Arn"]} for name in TASK_FUNCTIONS
            }
        },
    )


def test_definition_file_uses_exactly_the_substitutions() -> None:
    placeholders = set(re.findall(r"\$\{(\w+)\}", DEFINITION_FILE.read_text()))
    assert placeholders == {f"{name}Arn" for name in TASK_FUNCTIONS}


def test_state_machine_may_invoke_exactly_the_task_functions(
    resources, role_statements, logical_id
) -> None:
    role = resources("AWS::StepFunctions::StateMachine")[
        logical_id("AWS::StepFunctions::StateMachine", "RunStateMachine")
    ]["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    invoke_statements = [
        statement for statement in role_statements(role) if statement["Action"] == "lambda:InvokeFunction"
    ]
    invoked = [resource for statement in invoke_statements for resource in statement["Resource"]]
    assert sorted(invoked, key=str) == sorted(
        ({"Fn::GetAtt": [name, "Arn"]} for name in TASK_FUNCTIONS), key=str
    )


def test_review_keeper_runs_every_fifteen_minutes_and_a_review_outlasts_two_missed_passes(
        template: Template) -> None:
    heartbeat = json.loads(DEFINITION_FILE.read_text())["States"]["Await review"]["HeartbeatSeconds"]
    assert heartbeat == REVIEW_HEARTBEAT_SECONDS > 3 * REVIEW_KEEPER_INTERVAL_MINUTES * 60
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": f"rate({REVIEW_KEEPER_INTERVAL_MINUTES} minutes)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": ["ReviewKeeperFunction", "Arn"]}})],
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": ["ReviewKeeperFunction", "Arn"]},
            "Principal": "events.amazonaws.com",
        },
    )


def test_every_end_of_a_test_build_of_this_project_reaches_the_function_that_wakes_its_stage(
        template: Template, logical_id) -> None:
    project = logical_id("AWS::CodeBuild::Project", "TestBuilds")
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.codebuild"],
                "detail-type": [BUILD_STATE_CHANGE],
                "detail": {"project-name": [{"Ref": project}], "build-status": list(ENDED_BUILD_STATUSES)},
            },
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": ["BuildEndedFunction", "Arn"]},
                                           "RetryPolicy": {"MaximumRetryAttempts": 8}})],
        },
    )
    # Every way a build can end, as CodeBuild names them, and the same names the handler accepts.
    assert set(ENDED_BUILD_STATUSES) == {"SUCCEEDED", "FAILED", "FAULT", "STOPPED", "TIMED_OUT"}
    assert set(get_args(BuildStateChange.model_fields["build_status"].annotation)) == set(ENDED_BUILD_STATUSES)
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"Action": "lambda:InvokeFunction", "FunctionName": {"Fn::GetAtt": ["BuildEndedFunction", "Arn"]},
         "Principal": "events.amazonaws.com"},
    )
