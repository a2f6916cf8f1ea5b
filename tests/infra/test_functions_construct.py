"""Lambda functions: the contract's table, the latest Python on arm64, one least-privilege role each."""

from __future__ import annotations

import json
import re

import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]

# The contract's function table: logical id -> (handler, timeout in seconds).
CONTRACT_FUNCTIONS = {
    "ApiFunction": ("agentledger.handlers.api.handler", 29),
    "AssessFunction": ("agentledger.handlers.control.assess", 60),
    "InspectFunction": ("agentledger.handlers.stages.inspect", 300),
    "PlanFunction": ("agentledger.handlers.stages.plan", 300),
    "ExecuteFunction": ("agentledger.handlers.stages.execute", 300),
    "VerifyFunction": ("agentledger.handlers.stages.verify", 120),
    "WatchBuildFunction": ("agentledger.handlers.builds.watch", 20),
    "BuildEndedFunction": ("agentledger.handlers.builds.ended", 20),
    "RequestReviewFunction": ("agentledger.handlers.review.request", 20),
    "CompleteFunction": ("agentledger.handlers.stages.complete", 300),
    "ClassifyFunction": ("agentledger.handlers.control.classify", 60),
    "ReviewKeeperFunction": ("agentledger.handlers.review.keep_alive", 60),
    "EffectFunction": ("agentledger.handlers.effects.deliver", 15),
}
WORKFLOW_DRIVERS = {"ApiFunction", "ReviewKeeperFunction", "BuildEndedFunction"}
BUILD_WAITERS = {"WatchBuildFunction", "BuildEndedFunction"}  # the build wait table's only users
ARTIFACT_USERS = set(CONTRACT_FUNCTIONS) - BUILD_WAITERS
ARTIFACT_READERS = {"ApiFunction", "AssessFunction", "ReviewKeeperFunction", "EffectFunction"}
IDEMPOTENCY_USERS = {"ApiFunction", "EffectFunction", "RequestReviewFunction"}
NOTIFIERS = {"EffectFunction", "RequestReviewFunction"}  # RequestReview notifies the reviewers
GITHUB_WRITERS = {"EffectFunction"}  # tickets and pull requests: the only role that reads the token
BUILD_STARTERS = {"ExecuteFunction", "VerifyFunction"}
WORKFLOW_RUNNERS = set(CONTRACT_FUNCTIONS) - {"ApiFunction", "EffectFunction"} - BUILD_WAITERS
GITHUB_ENVIRONMENT = {"AGENTLEDGER_GITHUB_API_URL", "AGENTLEDGER_GITHUB_REPOSITORY", "AGENTLEDGER_GITHUB_BASE_BRANCH",
                      "AGENTLEDGER_GITHUB_TOKEN_SECRET_ARN"}
STATE_MACHINE_TASKS = set(CONTRACT_FUNCTIONS) - {"ApiFunction", "ReviewKeeperFunction", "BuildEndedFunction"}
STATES_ACTIONS = {
    "states:StartExecution",
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
    "states:DescribeExecution",
}


def _latest_python_runtime() -> lambda_.Runtime:
    runtimes = [
        getattr(lambda_.Runtime, name)
        for name in dir(lambda_.Runtime)
        if re.fullmatch(r"PYTHON_3_\d+", name)
    ]
    return max(runtimes, key=lambda runtime: int(runtime.name.split(".")[1]))


def test_exactly_the_contract_functions_exist(resources) -> None:
    assert set(resources("AWS::Lambda::Function")) == set(CONTRACT_FUNCTIONS)


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_function_matches_the_contract(resources, logical_id, name: str) -> None:
    handler, timeout = CONTRACT_FUNCTIONS[name]
    properties = resources("AWS::Lambda::Function")[name]["Properties"]
    assert properties["Handler"] == handler
    assert properties["Timeout"] == timeout
    assert properties["Runtime"] == _latest_python_runtime().name
    assert properties["Architectures"] == ["arm64"]
    assert properties["TracingConfig"] == {"Mode": "Active"}
    assert properties["Layers"] == [{"Ref": logical_id("AWS::Lambda::LayerVersion", "DependenciesLayer")}]


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_function_logs_to_its_own_log_group_with_retention(resources, name: str) -> None:
    log_group = resources("AWS::Lambda::Function")[name]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert resources("AWS::Logs::LogGroup")[log_group]["Properties"]["RetentionInDays"] == 30


def test_log_groups_and_roles_are_not_shared(resources) -> None:
    functions = resources("AWS::Lambda::Function").values()
    roles = {function["Properties"]["Role"]["Fn::GetAtt"][0] for function in functions}
    log_groups = {function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"] for function in functions}
    assert len(roles) == len(log_groups) == len(CONTRACT_FUNCTIONS)


def test_function_roles_use_no_managed_policies(resources) -> None:
    roles = resources("AWS::IAM::Role")
    for function in resources("AWS::Lambda::Function").values():
        role = roles[function["Properties"]["Role"]["Fn::GetAtt"][0]]
        assert "ManagedPolicyArns" not in role["Properties"]


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_function_environment(resources, logical_id, name: str) -> None:
    variables = resources("AWS::Lambda::Function")[name]["Properties"]["Environment"]["Variables"]
    assert variables["LEDGER_TABLE_NAME"] == {"Ref": logical_id("AWS::DynamoDB::Table", "LedgerTable")}
    if name in IDEMPOTENCY_USERS:
        assert variables["IDEMPOTENCY_TABLE_NAME"] == {
            "Ref": logical_id("AWS::DynamoDB::Table", "IdempotencyTable")
        }
    else:
        assert "IDEMPOTENCY_TABLE_NAME" not in variables
    assert variables["ARTIFACT_BUCKET_NAME"] == {"Ref": logical_id("AWS::S3::Bucket", "ArtifactBucket")}
    assert variables["POWERTOOLS_SERVICE_NAME"] == "agentledger"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "AgentLedger"
    assert variables["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert variables["AGENTLEDGER_ENVIRONMENT"] == "dev"
    assert variables["AGENTLEDGER_MAX_REPLANS"] == "3"
    if name in WORKFLOW_RUNNERS:
        # cdk.json's defaults: an empty plan ends the run without review; the reference agent.
        assert variables["AGENTLEDGER_REVIEW_EMPTY_PLANS"] == "false"
        assert variables["AGENTLEDGER_AGENT"] == ""
        assert variables["AGENTLEDGER_BEDROCK_MAX_REASKS"] == "2"
        assert float(variables["AGENTLEDGER_WORKSPACE_RETENTION_HOURS"]) == 24
    else:
        assert "AGENTLEDGER_AGENT" not in variables and "AGENTLEDGER_WRITER" not in variables
    if name in WORKFLOW_DRIVERS:
        assert variables["STATE_MACHINE_ARN"] == {
            "Ref": logical_id("AWS::StepFunctions::StateMachine", "RunStateMachine")
        }
    else:
        assert "STATE_MACHINE_ARN" not in variables
    assert ("TEST_BUILD_PROJECT_NAME" in variables) == (name in ("ExecuteFunction", "VerifyFunction"))
    assert ("NOTIFICATION_TOPIC_ARN" in variables) == (name in NOTIFIERS)
    assert GITHUB_ENVIRONMENT & set(variables) == (GITHUB_ENVIRONMENT if name in GITHUB_WRITERS else set())


def test_verify_function_is_told_its_build_project_and_timeout_limit(resources, logical_id) -> None:
    variables = resources("AWS::Lambda::Function")["VerifyFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["TEST_BUILD_PROJECT_NAME"] == {"Ref": logical_id("AWS::CodeBuild::Project", "TestBuilds")}
    assert variables["AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS"] == "3600"


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_only_the_workflow_drivers_control_executions(function_actions, name: str) -> None:
    granted = function_actions(name) & STATES_ACTIONS
    if name == "ApiFunction":
        assert granted == STATES_ACTIONS
    elif name in ("ReviewKeeperFunction", "BuildEndedFunction"):  # answer tasks, start nothing
        assert granted == STATES_ACTIONS - {"states:StartExecution"}
    else:
        assert granted == set()


def test_execution_grants_are_scoped_to_the_run_state_machine(function_statements, logical_id) -> None:
    state_machine = logical_id("AWS::StepFunctions::StateMachine", "RunStateMachine")
    for name in WORKFLOW_DRIVERS:
        for statement in function_statements(name):
            if str(statement["Action"]).startswith("states:"):
                assert state_machine in str(statement["Resource"]), statement


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_every_function_writes_its_own_logs_and_traces(function_statements, resources, name: str) -> None:
    log_group = resources("AWS::Lambda::Function")[name]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    statements = function_statements(name)
    assert Match.array_with(
        [
            Match.object_like(
                {
                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": {"Fn::GetAtt": [log_group, "Arn"]},
                }
            )
        ]
    ).test(statements).is_success
    assert any(
        statement["Resource"] == "*"
        and set(statement["Action"]) == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
        for statement in statements
    )


def test_idempotency_table_is_granted_only_to_the_api_and_the_effect_deliverers(
    function_statements, logical_id
) -> None:
    table = logical_id("AWS::DynamoDB::Table", "IdempotencyTable")
    with_access = {
        name
        for name in CONTRACT_FUNCTIONS
        if any(table in str(statement["Resource"]) for statement in function_statements(name))
    }
    assert with_access == IDEMPOTENCY_USERS
    for name in IDEMPOTENCY_USERS:  # Powertools reads, puts, updates and deletes its records
        actions = {
            action
            for statement in function_statements(name)
            if table in str(statement["Resource"])
            for action in statement["Action"]
        }
        assert {
            "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"
        } <= actions


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_only_stage_functions_write_artifacts(function_statements, logical_id, name: str) -> None:
    bucket = logical_id("AWS::S3::Bucket", "ArtifactBucket")
    artifact_actions = {
        action
        for statement in function_statements(name)
        if bucket in str(statement["Resource"])
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }
    if name == "ApiFunction":
        # Reads sources and signs upload grants; it may write only under repositories/.
        assert artifact_actions == {"s3:ListBucket", "s3:GetObject", "s3:PutObject"}
        writes = [statement for statement in function_statements(name) if "s3:PutObject" in str(statement["Action"])]
        assert [json.dumps(statement["Resource"]).endswith('"/repositories/*"]]}') for statement in writes] == [True]
    elif name in ARTIFACT_READERS:
        assert artifact_actions == {"s3:ListBucket", "s3:GetObject"}
    elif name in BUILD_WAITERS:
        assert artifact_actions == set()
    else:
        assert artifact_actions == {"s3:ListBucket", "s3:GetObject", "s3:PutObject"}
        writes = [statement for statement in function_statements(name) if "s3:PutObject" in str(statement["Action"])]
        assert [json.dumps(statement["Resource"]).endswith('"/runs/*"]]}') for statement in writes] == [True]


@pytest.mark.parametrize("name", sorted(ARTIFACT_USERS))
def test_objects_are_read_and_listed_under_the_buckets_two_prefixes_only(function_statements, logical_id,
                                                                          name: str) -> None:
    bucket = logical_id("AWS::S3::Bucket", "ArtifactBucket")
    (listing,) = [s for s in function_statements(name) if s["Action"] == "s3:ListBucket"]
    assert listing["Resource"] == {"Fn::GetAtt": [bucket, "Arn"]}
    assert sorted(listing["Condition"]["StringLike"]["s3:prefix"]) == ["repositories/*", "runs/*"]
    (reads,) = [s for s in function_statements(name) if s["Action"] == "s3:GetObject"]
    assert sorted(resource["Fn::Join"][1][1] for resource in reads["Resource"]) == ["/repositories/*", "/runs/*"]


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_each_function_holds_exactly_the_dynamodb_actions_its_code_calls(function_statements, logical_id,
                                                                          name: str) -> None:
    ledger = logical_id("AWS::DynamoDB::Table", "LedgerTable")
    idempotency = logical_id("AWS::DynamoDB::Table", "IdempotencyTable")
    build_waits = logical_id("AWS::DynamoDB::Table", "BuildWaitTable")
    by_resource: dict[str, set[str]] = {}
    for statement in function_statements(name):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if any(action.startswith("dynamodb:") for action in actions):
            by_resource.setdefault(json.dumps(statement["Resource"]), set()).update(actions)
    expected = {
        # Every function records decisions; a change is a transaction of conditional Puts.
        json.dumps({"Fn::GetAtt": [ledger, "Arn"]}): {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"},
        json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [ledger, "Arn"]}, "/index/*"]]}): {"dynamodb:Query"},
    }
    if name in IDEMPOTENCY_USERS:
        expected[json.dumps({"Fn::GetAtt": [idempotency, "Arn"]})] = {
            "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    if name in BUILD_WAITERS:
        # Parked (Put), taken once (a conditional Delete), read by build (Query), the last end
        # marked (Update) and read (Get); neither reads the ledger (the stage's answer names the build).
        expected = {json.dumps({"Fn::GetAtt": [build_waits, "Arn"]}): {
            "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:GetItem"}}
    assert by_resource == expected


def test_the_api_and_every_state_machine_task_have_reserved_concurrency(resources) -> None:
    for name, function in resources("AWS::Lambda::Function").items():
        reserved = function["Properties"].get("ReservedConcurrentExecutions")
        assert reserved == (20 if name in STATE_MACHINE_TASKS | {"ApiFunction"} else None), name


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_no_function_may_delete_or_use_wildcard_actions(function_actions, name: str) -> None:
    actions = function_actions(name)
    assert not any("*" in action for action in actions), actions
    assert not any(action.startswith("s3:Delete") for action in actions)


def test_dependencies_layer_targets_the_function_runtime(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {
            "CompatibleRuntimes": [_latest_python_runtime().name],
            "CompatibleArchitectures": ["arm64"],
        },
    )


# -- EffectFunction: every external write, to the notification topic and GitHub ----------------


def test_effect_function_environment(resources, logical_id) -> None:
    variables = resources("AWS::Lambda::Function")["EffectFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["NOTIFICATION_TOPIC_ARN"] == {"Ref": logical_id("AWS::SNS::Topic", "NotificationTopic")}
    assert variables["AGENTLEDGER_GITHUB_TOKEN_SECRET_ARN"] == {
        "Ref": logical_id("AWS::SecretsManager::Secret", "GitHubTokenSecret")
    }
    # cdk.json's defaults: GitHub's public API, and no repository (tickets off).
    assert variables["AGENTLEDGER_GITHUB_API_URL"] == "https://api.github.com"
    assert variables["AGENTLEDGER_GITHUB_REPOSITORY"] == ""
    assert variables["AGENTLEDGER_GITHUB_BASE_BRANCH"] == "main"


def _statements_with(function_statements, name: str, action: str) -> list[dict]:
    return [
        statement
        for statement in function_statements(name)
        if action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    ]


def test_effect_function_publishes_to_the_notification_topic_only(function_statements, logical_id) -> None:
    (publish,) = _statements_with(function_statements, "EffectFunction", "sns:Publish")
    assert publish["Effect"] == "Allow"
    assert publish["Resource"] == {"Ref": logical_id("AWS::SNS::Topic", "NotificationTopic")}


def test_effect_function_may_use_the_notification_key_to_publish(function_statements, logical_id) -> None:
    key = logical_id("AWS::KMS::Key", "NotificationTopicKey")
    (statement,) = _statements_with(function_statements, "EffectFunction", "kms:GenerateDataKey")
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statement["Resource"] == {"Fn::GetAtt": [key, "Arn"]}


def test_effect_function_reads_the_github_token_secret_only(function_statements, logical_id) -> None:
    (read,) = _statements_with(function_statements, "EffectFunction", "secretsmanager:GetSecretValue")
    assert read["Action"] == "secretsmanager:GetSecretValue"
    assert read["Resource"] == {"Ref": logical_id("AWS::SecretsManager::Secret", "GitHubTokenSecret")}


@pytest.mark.parametrize("name", sorted(CONTRACT_FUNCTIONS))
def test_only_the_notifiers_publish_and_only_the_github_writer_reads_the_token(function_actions, name: str) -> None:
    receiver_actions = {
        action
        for action in function_actions(name)
        if action.split(":")[0] in {"sns", "kms", "secretsmanager"}
    }
    expected = set()
    if name in NOTIFIERS:
        expected |= {"sns:Publish", "kms:GenerateDataKey", "kms:Decrypt"}
    if name in GITHUB_WRITERS or name == "ApiFunction":  # the API's is the cursor signing key, below
        expected.add("secretsmanager:GetSecretValue")
    if name in BUILD_STARTERS:  # the output grants' key (test_build_sandbox_construct.py)
        expected |= {"kms:Encrypt", "kms:GenerateDataKey"}
    assert receiver_actions == expected


def test_only_the_api_function_reads_the_cursor_signing_key(resources, function_statements, logical_id) -> None:
    key = logical_id("AWS::SecretsManager::Secret", "CursorSigningKey")
    (read,) = _statements_with(function_statements, "ApiFunction", "secretsmanager:GetSecretValue")
    assert read["Action"] == "secretsmanager:GetSecretValue" and read["Resource"] == {"Ref": key}
    for name, function in resources("AWS::Lambda::Function").items():
        variables = function["Properties"]["Environment"]["Variables"]
        assert ("CURSOR_SIGNING_SECRET_ARN" in variables) == (name == "ApiFunction")
    assert resources("AWS::Lambda::Function")["ApiFunction"]["Properties"]["Environment"]["Variables"][
        "CURSOR_SIGNING_SECRET_ARN"] == {"Ref": key}
    secret = resources("AWS::SecretsManager::Secret")[key]["Properties"]
    assert secret["GenerateSecretString"]["PasswordLength"] == 64
