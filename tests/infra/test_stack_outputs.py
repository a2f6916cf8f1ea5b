"""The stack's outputs, its environment name, and a clean bill from cdk-nag and CDK itself."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from agentledger.deploy import app as infra_app
from agentledger.deploy.app import build_app
from agentledger.deploy.constructs.functions import Concurrency
from agentledger.source import ArchiveLimits

if TYPE_CHECKING:
    from aws_cdk import App

    from agentledger.deploy.stack import AgentLedgerStack

pytestmark = pytest.mark.infra

# What `cdk synth -c key=value` passes: strings, whatever the key's type in cdk.json.
CUSTOM_CONTEXT = {
    "environment": "staging",
    "githubApiUrl": "https://github.example.com/api/v3",
    "githubRepository": "octo-org/service",
    "reviewAlarmSeconds": "3600",
    "testTimeoutLimitSeconds": "600",
    "buildComputes": "BUILD_GENERAL1_SMALL",
    "buildImages": "aws/codebuild/standard:7.0,aws/codebuild/amazonlinux2-x86_64-standard:5.0",
    "archiveMaxMembers": "5000",
    "archiveMaxBytes": "104857600",
    "archiveMaxRatio": "50",
    "apiConcurrency": "5",
    "stageConcurrency": "3",
    "testBuildConcurrency": "2",
    "artifactLinkSeconds": "300",
    "isolatedTestBuilds": "false",
    "allowSelfApproval": "true",
    "githubBaseBranch": "trunk",
    "reviewEmptyPlans": "true",
    "agent": "",
    "writer": "bedrock",
    "generationModuleSeconds": "30",
    "generationRunSeconds": "300",
    "generationIterations": "500",
    "generationRuns": "3",
    "mutationModuleSeconds": "20",
    "mutationRunSeconds": "120",
    "bedrockModelId": "amazon.nova-micro-v1:0",
    "bedrockMaxTokens": "2048",
    "bedrockTemperature": "0.2",
    "bedrockPrices": "0.000035,0.00014",
    "bedrockMaxReasks": "1",
    "maxReplans": "5",
    "workspaceRetentionHours": "6",
}
# Every key the stack reads, with the default it has when no context sets it.
DEFAULTS = {
    "environment": infra_app.DEFAULT_ENVIRONMENT_NAME,
    "githubApiUrl": infra_app.DEFAULT_GITHUB_API_URL,
    "githubRepository": infra_app.DEFAULT_GITHUB_REPOSITORY,
    "reviewAlarmSeconds": infra_app.DEFAULT_REVIEW_ALARM_SECONDS,
    "testTimeoutLimitSeconds": infra_app.DEFAULT_TEST_TIMEOUT_LIMIT_SECONDS,
    "buildComputes": infra_app.DEFAULT_BUILD_COMPUTES,
    "buildImages": infra_app.DEFAULT_BUILD_IMAGES,
    "archiveMaxMembers": ArchiveLimits.max_members,
    "archiveMaxBytes": ArchiveLimits.max_bytes,
    "archiveMaxRatio": ArchiveLimits.max_ratio,
    "apiConcurrency": Concurrency.api,
    "stageConcurrency": Concurrency.stages,
    "testBuildConcurrency": Concurrency.test_builds,
    "artifactLinkSeconds": infra_app.DEFAULT_ARTIFACT_LINK_SECONDS,
    "isolatedTestBuilds": infra_app.DEFAULT_ISOLATED_TEST_BUILDS,
    "allowSelfApproval": infra_app.DEFAULT_ALLOW_SELF_APPROVAL,
    "githubBaseBranch": infra_app.DEFAULT_GITHUB_BASE_BRANCH,
    "reviewEmptyPlans": infra_app.DEFAULT_REVIEW_EMPTY_PLANS,
    "agent": infra_app.DEFAULT_AGENT,
    "writer": infra_app.DEFAULT_WRITER,
    "generationModuleSeconds": infra_app.DEFAULT_GENERATION_MODULE_SECONDS,
    "generationRunSeconds": infra_app.DEFAULT_GENERATION_RUN_SECONDS,
    "generationIterations": infra_app.DEFAULT_GENERATION_ITERATIONS,
    "generationRuns": infra_app.DEFAULT_GENERATION_RUNS,
    "mutationModuleSeconds": infra_app.DEFAULT_MUTATION_MODULE_SECONDS,
    "mutationRunSeconds": infra_app.DEFAULT_MUTATION_RUN_SECONDS,
    "bedrockModelId": infra_app.DEFAULT_BEDROCK_MODEL_ID,
    "bedrockMaxTokens": infra_app.DEFAULT_BEDROCK_MAX_TOKENS,
    "bedrockTemperature": infra_app.DEFAULT_BEDROCK_TEMPERATURE,
    "bedrockPrices": infra_app.DEFAULT_BEDROCK_PRICES,
    "bedrockMaxReasks": infra_app.DEFAULT_BEDROCK_MAX_REASKS,
    "maxReplans": infra_app.DEFAULT_MAX_REPLANS,
    "workspaceRetentionHours": infra_app.DEFAULT_WORKSPACE_RETENTION_HOURS,
}


@pytest.fixture(scope="module")
def custom_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A second synthesis, with every context key the stack reads set on the command line."""
    _, stack = build_app(context=CUSTOM_CONTEXT, outdir=tmp_path_factory.mktemp("cdk.out.custom"))
    return Template.from_stack(stack)


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


def test_side_effect_and_observability_outputs(template: Template, logical_id) -> None:
    outputs = template.find_outputs("*")
    assert outputs["NotificationTopicArn"]["Value"] == {
        "Ref": logical_id("AWS::SNS::Topic", "NotificationTopic")
    }
    assert outputs["GitHubTokenSecretArn"]["Value"] == {
        "Ref": logical_id("AWS::SecretsManager::Secret", "GitHubTokenSecret")
    }
    assert outputs["AlarmTopicArn"]["Value"] == {"Ref": logical_id("AWS::SNS::Topic", "AlarmTopic")}
    assert outputs["DashboardName"]["Value"] == {"Ref": logical_id("AWS::CloudWatch::Dashboard", "Dashboard")}
    assert outputs["TestBuildProjectName"]["Value"] == {"Ref": logical_id("AWS::CodeBuild::Project", "TestBuilds")}


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


def test_environment_name_comes_from_context(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    assert {
        function["Properties"]["Environment"]["Variables"]["AGENTLEDGER_ENVIRONMENT"]
        for function in functions.values()
    } == {"staging"}


def test_github_settings_come_from_context(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    variables = functions["EffectFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["AGENTLEDGER_GITHUB_API_URL"] == "https://github.example.com/api/v3"
    assert variables["AGENTLEDGER_GITHUB_REPOSITORY"] == "octo-org/service"


def test_review_alarm_threshold_comes_from_context(custom_template: Template) -> None:
    custom_template.has_resource_properties(
        "AWS::CloudWatch::Alarm", {"MetricName": "OldestPendingReviewAge", "Threshold": 3600}
    )


def test_cdk_json_documents_the_context_defaults() -> None:
    """That the documentation names every key is tests/unit/test_docs_reference.py's to show."""
    stack_keys = {key: value for key, value in infra_app.CDK_JSON["context"].items() if not key.startswith("@")}
    assert stack_keys == DEFAULTS
    assert set(CUSTOM_CONTEXT) == set(DEFAULTS)


def test_the_writer_and_its_model_come_from_context(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    variables = functions["PlanFunction"]["Properties"]["Environment"]["Variables"]
    assert (variables["AGENTLEDGER_WRITER"], variables["AGENTLEDGER_BEDROCK_MODEL_ID"],
            variables["AGENTLEDGER_BEDROCK_MAX_TOKENS"], variables["AGENTLEDGER_BEDROCK_TEMPERATURE"],
            variables["AGENTLEDGER_BEDROCK_PRICES"], variables["AGENTLEDGER_BEDROCK_MAX_REASKS"]) == (
        "bedrock", "amazon.nova-micro-v1:0", "2048", "0.2", "0.000035,0.00014", "1")
    effect_variables = functions["EffectFunction"]["Properties"]["Environment"]["Variables"]
    assert effect_variables["AGENTLEDGER_GITHUB_BASE_BRANCH"] == "trunk"
    assert variables["AGENTLEDGER_REVIEW_EMPTY_PLANS"] == "true"
    assert (variables["AGENTLEDGER_GENERATION_MODULE_SECONDS"], variables["AGENTLEDGER_GENERATION_RUN_SECONDS"],
            variables["AGENTLEDGER_GENERATION_ITERATIONS"], variables["AGENTLEDGER_GENERATION_RUNS"],
            variables["AGENTLEDGER_MUTATION_MODULE_SECONDS"], variables["AGENTLEDGER_MUTATION_RUN_SECONDS"]) == \
        ("30", "300", "500", "3", "20", "120")


def _bedrock_statements(template: Template) -> dict[str, list[dict]]:
    """Role logical id -> its statements that name a bedrock action."""
    found: dict[str, list[dict]] = {}
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(action.startswith("bedrock:") for action in actions):
                for role in policy["Properties"]["Roles"]:
                    found.setdefault(role["Ref"], []).append(statement)
    return found


def test_only_the_plan_function_may_invoke_and_only_the_configured_model(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    plan_role = functions["PlanFunction"]["Properties"]["Role"]["Fn::GetAtt"][0]
    granted = _bedrock_statements(custom_template)
    assert list(granted) == [plan_role]
    (statement,) = granted[plan_role]
    assert statement["Action"] == "bedrock:InvokeModel" and statement["Effect"] == "Allow"
    resource = json.dumps(statement["Resource"])
    assert "foundation-model/amazon.nova-micro-v1:0" in resource and "*" not in resource


def test_the_default_writer_needs_no_model_access(template: Template) -> None:
    assert _bedrock_statements(template) == {}


def test_the_bedrock_stack_passes_cdk_nag(tmp_path_factory: pytest.TempPathFactory) -> None:
    app, stack = build_app(context=CUSTOM_CONTEXT, outdir=tmp_path_factory.mktemp("cdk.out.nag"))
    report = AwsSolutionsChecks(app, verbose=True).validate_scope(stack)
    assert report.success, [v.rule_name for v in report.violations]


@pytest.mark.parametrize(("key", "value"), [("writer", "gpt"), ("bedrockPrices", "cheap"), ("bedrockMaxTokens", "0"),
                                          ("bedrockTemperature", "hot"), ("bedrockTemperature", "1.5"),
                                          ("bedrockMaxReasks", "-1")])
def test_a_bad_writer_setting_is_refused_naming_its_key(tmp_path, key: str, value: str) -> None:
    with pytest.raises(ValueError, match=key):
        build_app(context={key: value}, outdir=tmp_path)


def test_a_context_key_an_earlier_release_read_is_refused_with_its_name_now(tmp_path) -> None:
    with pytest.raises(ValueError, match="context key 'planner' is now 'writer'"):
        build_app(context={"planner": "bedrock"}, outdir=tmp_path)


def test_the_replan_and_workspace_bounds_come_from_context(custom_template: Template) -> None:
    for function in custom_template.find_resources("AWS::Lambda::Function").values():
        assert function["Properties"]["Environment"]["Variables"]["AGENTLEDGER_MAX_REPLANS"] == "5"
    variables = custom_template.find_resources("AWS::Lambda::Function")["ExecuteFunction"]["Properties"][
        "Environment"]["Variables"]
    assert float(variables["AGENTLEDGER_WORKSPACE_RETENTION_HOURS"]) == 6


@pytest.mark.parametrize(("key", "value"), [("maxReplans", "-1"), ("maxReplans", "some"),
                                          ("workspaceRetentionHours", "0"), ("workspaceRetentionHours", "a day"),
                                          # links live 5 to 15 minutes
                                          ("artifactLinkSeconds", "3600"), ("artifactLinkSeconds", "60"),
                                          ("artifactLinkSeconds", "soon"), ("archiveMaxRatio", "0"),
                                          ("stageConcurrency", "none")])
def test_a_bad_bound_is_refused_naming_its_key(tmp_path, key: str, value: str) -> None:
    with pytest.raises(ValueError, match=key):
        build_app(context={key: value}, outdir=tmp_path)


@pytest.mark.parametrize("value", ["0", "-5", "a day"])
def test_review_alarm_seconds_must_be_a_positive_number(tmp_path, value: str) -> None:
    with pytest.raises(ValueError, match="reviewAlarmSeconds"):
        build_app(context={"reviewAlarmSeconds": value}, outdir=tmp_path)


def test_the_test_timeout_limit_comes_from_context(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    variables = functions["VerifyFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS"] == "600"
    # The project's own timeout is what a build of the longest allowed suite needs: its install, the
    # project's install and the suite, 10 minutes each, and 10 to fetch and upload.
    custom_template.has_resource_properties("AWS::CodeBuild::Project", {"TimeoutInMinutes": 40})


def test_the_computes_and_images_a_repository_may_ask_for_come_from_context(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    variables = functions["VerifyFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["AGENTLEDGER_BUILD_COMPUTES"] == "BUILD_GENERAL1_SMALL"
    assert variables["AGENTLEDGER_BUILD_IMAGES"] == CUSTOM_CONTEXT["buildImages"]


def test_artifact_links_live_as_long_as_the_context_says(custom_template: Template) -> None:
    variables = custom_template.find_resources("AWS::Lambda::Function")["ApiFunction"]["Properties"]["Environment"]
    assert variables["Variables"]["AGENTLEDGER_ARTIFACT_LINK_SECONDS"] == "300"


def test_concurrency_comes_from_context(custom_template: Template) -> None:
    functions = custom_template.find_resources("AWS::Lambda::Function")
    assert functions["ApiFunction"]["Properties"]["ReservedConcurrentExecutions"] == 5
    assert functions["VerifyFunction"]["Properties"]["ReservedConcurrentExecutions"] == 3
    custom_template.has_resource_properties("AWS::CodeBuild::Project", {"ConcurrentBuildLimit": 2})


def test_every_function_gets_the_archive_bounds_from_context(custom_template: Template) -> None:
    for function in custom_template.find_resources("AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert (variables["AGENTLEDGER_ARCHIVE_MAX_MEMBERS"], variables["AGENTLEDGER_ARCHIVE_MAX_BYTES"],
                variables["AGENTLEDGER_ARCHIVE_MAX_RATIO"]) == ("5000", "104857600", "50")


@pytest.mark.parametrize(("key", "value"), [("buildComputes", "BUILD_GENERAL1_HUGE"), ("buildComputes", ""),
                                            ("buildImages", "bad image!"), ("buildImages", " , ")])
def test_an_allow_list_that_is_empty_or_names_what_codebuild_does_not_have_is_refused(tmp_path, key, value) -> None:
    with pytest.raises(ValueError, match=f"context {key} must be a comma-separated list"):
        build_app(context={key: value}, outdir=tmp_path)


@pytest.mark.parametrize(("key", "value"), [("githubApiUrl", "http://github.example.com/api/v3"),
                                            ("githubRepository", "not-a-repository"),
                                            ("githubBaseBranch", "main..dev")])
def test_github_settings_that_the_functions_would_refuse_are_refused_at_synth(tmp_path, key, value) -> None:
    with pytest.raises(ValueError, match=f"context {key}: "):
        build_app(context={key: value}, outdir=tmp_path)


@pytest.mark.parametrize("value", ["yes", "1", ""])
def test_isolated_test_builds_must_be_true_or_false(tmp_path, value: str) -> None:
    with pytest.raises(ValueError, match="isolatedTestBuilds must be true or false"):
        build_app(context={"isolatedTestBuilds": value}, outdir=tmp_path)


def test_self_approval_is_off_unless_the_context_allows_it(template: Template, custom_template: Template) -> None:
    def setting(synthesized: Template) -> dict[str, str]:
        return {name: function["Properties"]["Environment"]["Variables"].get("AGENTLEDGER_ALLOW_SELF_APPROVAL")
                for name, function in synthesized.find_resources("AWS::Lambda::Function").items()
                if "AGENTLEDGER_ALLOW_SELF_APPROVAL" in function["Properties"]["Environment"]["Variables"]}
    # Only the function that applies review decisions reads it.
    assert setting(template) == {"ApiFunction": "false"}
    assert setting(custom_template) == {"ApiFunction": "true"}


@pytest.mark.parametrize("value", ["yes", "1", "maybe"])
def test_allow_self_approval_must_be_true_or_false(tmp_path, value: str) -> None:
    with pytest.raises(ValueError, match="allowSelfApproval must be true or false"):
        build_app(context={"allowSelfApproval": value}, outdir=tmp_path)
