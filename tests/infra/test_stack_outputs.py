"""The stack's outputs, its environment name, and a clean bill from cdk-nag and CDK itself."""

from __future__ import annotations

import pytest
from aws_cdk import App
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from infra.app import build_app
from infra.stack import AgentLedgerStack

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]


def test_outputs(template: Template, logical_id) -> None:
    outputs = template.find_outputs("*")
    assert {"ApiUrl", "StateMachineArn", "LedgerTableName", "ArtifactBucketName", "IdempotencyTableName"} <= set(
        outputs
    )
    assert outputs["StateMachineArn"]["Value"] == {
        "Ref": logical_id("AWS::StepFunctions::StateMachine", "RunStateMachine")
    }
    assert outputs["LedgerTableName"]["Value"] == {"Ref": logical_id("AWS::DynamoDB::Table", "LedgerTable")}
    assert outputs["IdempotencyTableName"]["Value"] == {
        "Ref": logical_id("AWS::DynamoDB::Table", "IdempotencyTable")
    }
    assert outputs["ArtifactBucketName"]["Value"] == {"Ref": logical_id("AWS::S3::Bucket", "ArtifactBucket")}
    assert logical_id("AWS::ApiGateway::RestApi", "RestApi") in str(outputs["ApiUrl"]["Value"])


def test_aws_solutions_checks_find_nothing_unacknowledged(
    app_and_stack: tuple[App, AgentLedgerStack],
) -> None:
    app, stack = app_and_stack
    report = AwsSolutionsChecks(app, verbose=True).validate_scope(stack)
    findings = [
        f"{violation.severity} {violation.rule_name}: {resource.construct_path}"
        for violation in report.violations
        for resource in violation.violating_resources
    ]
    assert report.success and findings == []


def test_synthesis_reports_no_errors_or_warnings(stack: AgentLedgerStack, template: Template) -> None:
    # `template` forces synthesis first, which is when deprecations and nag findings surface.
    annotations = Annotations.from_stack(stack)
    assert annotations.find_error("*", Match.any_value()) == []
    assert annotations.find_warning("*", Match.any_value()) == []


def test_environment_name_comes_from_context(tmp_path) -> None:
    _, stack = build_app(context={"environment": "staging"}, outdir=tmp_path)
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    assert {
        function["Properties"]["Environment"]["Variables"]["AGENTLEDGER_ENVIRONMENT"]
        for function in functions.values()
    } == {"staging"}
