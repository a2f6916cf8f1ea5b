"""The test-build sandbox: a CodeBuild project whose role writes its own logs and reads its output
grant and nothing else, started only by the stages that run builds, optionally in a VPC with no
route out."""

from __future__ import annotations

import json
from fnmatch import fnmatch
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from agentledger.artifacts import artifact_key
from agentledger.buildkit.layout import TOOLS_DIR, VENVS_DIR
from agentledger.deploy.app import DEFAULT_TEST_TIMEOUT_LIMIT_SECONDS
from agentledger.deploy.constructs.build_sandbox import BUILD_READS, BUILD_WRITES
from agentledger.deploy.constructs.functions import TEST_BUILD_ACTIONS
from agentledger.models import Stage
from agentledger.states import BUILD_STAGES
from agentledger.testrun.layout import BUILDSPEC, CACHE_PATH_ON_CODEBUILD, KIT_COMMAND, build_timeout_minutes

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]

# Services whose data or control a test build must never reach (SSM and KMS it reaches for its
# output grant alone, checked statement by statement below).
FORBIDDEN_SERVICES = ("s3", "dynamodb", "states", "secretsmanager", "sts", "iam", "sns", "lambda",
                      "codebuild", "execute-api", "events")
VPC_NETWORK_ACTIONS = {
    "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces", "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs",
}


def _only(resources: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = resources.items()
    return logical_id, resource


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        action = statement["Action"]
        found.update(action if isinstance(action, list) else [action])
    return found


def _build_role(template: Template) -> tuple[str, dict[str, Any]]:
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    role_id = project["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    return role_id, template.find_resources("AWS::IAM::Role")[role_id]


def _statements_of(template: Template, role_id: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


# --- the project ------------------------------------------------------------------------------

def test_the_project_runs_the_layouts_buildspec_without_source_artifacts_or_privilege(template: Template) -> None:
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    properties = project["Properties"]
    assert properties["Source"]["Type"] == "NO_SOURCE"
    assert json.loads(properties["Source"]["BuildSpec"]) == BUILDSPEC
    assert properties["Artifacts"] == {"Type": "NO_ARTIFACTS"}
    assert properties["Environment"]["PrivilegedMode"] is False
    assert properties["Environment"]["Image"] == "aws/codebuild/standard:7.0"
    assert properties["Cache"] == {"Type": "LOCAL", "Modes": ["LOCAL_CUSTOM_CACHE"]}
    assert properties["TimeoutInMinutes"] == build_timeout_minutes(DEFAULT_TEST_TIMEOUT_LIMIT_SECONDS)
    assert "VpcConfig" not in properties  # the default: isolatedTestBuilds is off


def test_the_build_hosts_cache_keeps_only_what_no_repositorys_code_writes_for_another(template: Template) -> None:
    """CodeBuild's local cache is the project's, so every repository's builds on a host share it. It
    keeps the venvs (an entry per repository, named by the stage, root's once filled) and the kit's
    own tools (filled before any repository command runs), never the downloads a build's code wrote;
    and every command of agentledger's runs the kit isolated from the repository (`-I`), as root,
    while the repository's commands run as another uid (buildkit/processes.py)."""
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    buildspec = json.loads(project["Properties"]["Source"]["BuildSpec"])
    assert buildspec["cache"]["paths"] == [f"{CACHE_PATH_ON_CODEBUILD}/{VENVS_DIR}/**/*",
                                           f"{CACHE_PATH_ON_CODEBUILD}/{TOOLS_DIR}/**/*"]
    commands = [command for phase in buildspec["phases"].values() for command in phase["commands"]]
    assert [command for command in commands if "python" in command] == [
        f"{KIT_COMMAND} {name}" for name in ("prepare", "install", "test", "upload")]
    assert "run-as" not in buildspec  # root, so that the kit may run the repository's commands as another uid
    assert project["Properties"]["Environment"]["PrivilegedMode"] is False  # Docker's default seccomp profile holds


def test_builds_log_to_their_own_group_kept_one_month(template: Template) -> None:
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    logs = project["Properties"]["LogsConfig"]["CloudWatchLogs"]
    assert logs["Status"] == "ENABLED"
    group = template.find_resources("AWS::Logs::LogGroup")[logs["GroupName"]["Ref"]]
    assert group["Properties"]["RetentionInDays"] == 30


# --- the build role, action by action -----------------------------------------------------------

def test_the_build_role_is_assumed_by_codebuild_of_this_account_only(template: Template) -> None:
    _, role = _build_role(template)
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "codebuild.amazonaws.com"}
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert "ManagedPolicyArns" not in role["Properties"]
    assert "Policies" not in role["Properties"]


def _log_streams(template: Template) -> dict[str, Any]:
    """The ARN pattern of the streams in the project's own log group, as the template writes it."""
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    log_group = project["Properties"]["LogsConfig"]["CloudWatchLogs"]["GroupName"]["Ref"]
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":logs:", {"Ref": "AWS::Region"}, ":",
                              {"Ref": "AWS::AccountId"}, ":log-group:", {"Ref": log_group}, ":log-stream:*"]]}


def _grant_parameters() -> dict[str, Any]:
    """The ARN pattern of the output grants' parameters, as the template writes it."""
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":ssm:", {"Ref": "AWS::Region"}, ":",
                              {"Ref": "AWS::AccountId"}, ":parameter/AgentLedgerStack/output-grants/*"]]}


def _grant_key(template: Template) -> tuple[str, dict[str, Any]]:
    return _only(template.find_resources("AWS::KMS::Key", {"Properties": {"Description": Match.string_like_regexp(
        "output grants")}}))


THROUGH_SSM = {"StringEquals": {"kms:ViaService": {"Fn::Join": ["", ["ssm.", {"Ref": "AWS::Region"},
                                                                      ".amazonaws.com"]]}}}


def test_the_build_role_writes_its_own_log_streams_and_reads_output_grants_and_nothing_else(template: Template) -> None:
    # Not the group's ARN (which grants the group's own actions too): its streams, the tightest
    # IAM allows, since a stream is named after its build's id and no policy variable yields that.
    # The grants: read by name (no listing), decrypted through SSM only.
    role_id, _ = _build_role(template)
    key_id, _ = _grant_key(template)
    assert _statements_of(template, role_id) == [
        {"Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Effect": "Allow",
         "Resource": _log_streams(template)},
        {"Action": "ssm:GetParameters", "Effect": "Allow", "Resource": _grant_parameters()},
        {"Action": "kms:Decrypt", "Effect": "Allow", "Resource": {"Fn::GetAtt": [key_id, "Arn"]},
         "Condition": THROUGH_SSM},
    ]


def test_no_one_but_the_build_role_may_decrypt_an_output_grant(template: Template) -> None:
    role_id, _ = _build_role(template)
    _, key = _grant_key(template)
    assert key["Properties"]["EnableKeyRotation"] is True
    denied = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if s["Effect"] == "Deny"]
    assert denied == [{"Action": "kms:Decrypt", "Effect": "Deny", "Principal": {"AWS": "*"}, "Resource": "*",
                       "Condition": {"ArnNotEquals": {"aws:PrincipalArn": {"Fn::GetAtt": [role_id, "Arn"]}}}}]


def test_the_stages_that_run_builds_write_and_delete_grants_and_encrypt_but_never_decrypt(template: Template) -> None:
    key_id, _ = _grant_key(template)
    for name, function in template.find_resources("AWS::Lambda::Function").items():
        statements = _statements_of(template, function["Properties"]["Role"]["Fn::GetAtt"][0])
        grants = [s for s in statements if s["Resource"] in (_grant_parameters(), {"Fn::GetAtt": [key_id, "Arn"]})]
        if name in ("ExecuteFunction", "VerifyFunction"):
            assert grants == [
                {"Action": ["ssm:DeleteParameter", "ssm:PutParameter"], "Effect": "Allow",
                 "Resource": _grant_parameters()},
                {"Action": ["kms:Encrypt", "kms:GenerateDataKey"], "Effect": "Allow",
                 "Resource": {"Fn::GetAtt": [key_id, "Arn"]}, "Condition": THROUGH_SSM},
            ], name
            variables = function["Properties"]["Environment"]["Variables"]
            assert variables["OUTPUT_GRANT_PARAMETER_PATH"] == "/AgentLedgerStack/output-grants"
            assert variables["OUTPUT_GRANT_KEY_ARN"] == {"Fn::GetAtt": [key_id, "Arn"]}
        else:
            assert grants == [], name


@pytest.mark.parametrize("service", FORBIDDEN_SERVICES)
def test_the_build_role_cannot_touch_data_or_control(template: Template, isolated, service: str) -> None:
    for synthesized in (template, isolated[2]):
        role_id, _ = _build_role(synthesized)
        assert {a for a in _actions(_statements_of(synthesized, role_id)) if a.startswith(f"{service}:")} == set()


def test_only_the_stages_that_run_builds_control_builds_of_this_project(template: Template) -> None:
    project_id, _ = _only(template.find_resources("AWS::CodeBuild::Project"))
    functions = template.find_resources("AWS::Lambda::Function")
    for name, function in functions.items():
        statements = _statements_of(template, function["Properties"]["Role"]["Fn::GetAtt"][0])
        codebuild = [s for s in statements if any(a.startswith("codebuild:") for a in _actions([s]))]
        if name in ("ExecuteFunction", "VerifyFunction"):  # writing tests, running the suite
            assert _actions(codebuild) == set(TEST_BUILD_ACTIONS)
            assert [s["Resource"] for s in codebuild] == [{"Fn::GetAtt": [project_id, "Arn"]}]
        elif name == "WatchBuildFunction":  # a parked wait looks at its build's status, and only that
            assert _actions(codebuild) == {"codebuild:BatchGetBuilds"}
            assert [s["Resource"] for s in codebuild] == [{"Fn::GetAtt": [project_id, "Arn"]}]
        else:
            assert codebuild == [], name
    assert set(TEST_BUILD_ACTIONS) == {"codebuild:StartBuild", "codebuild:BatchGetBuilds",
                                       "codebuild:ListBuildsForProject"}


# --- isolatedTestBuilds ---------------------------------------------------------------------------

def test_isolated_builds_run_in_subnets_with_no_route_out(isolated) -> None:
    _, _, template = isolated
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    vpc_config = project["Properties"]["VpcConfig"]
    assert len(vpc_config["Subnets"]) == 2
    assert template.find_resources("AWS::EC2::NatGateway") == {}
    assert template.find_resources("AWS::EC2::InternetGateway") == {}
    assert template.find_resources("AWS::EC2::EgressOnlyInternetGateway") == {}
    for route in template.find_resources("AWS::EC2::Route").values():
        pytest.fail(f"unexpected route {route['Properties']}")
    endpoints = {json.dumps(e["Properties"]["ServiceName"]): e["Properties"]["VpcEndpointType"]
                 for e in template.find_resources("AWS::EC2::VPCEndpoint").values()}
    assert sorted(endpoints.values()) == ["Gateway", "Interface", "Interface"]
    assert {service for service in ("s3", "logs", "ssm") if any(f".{service}" in name for name in endpoints)} == {
        "s3", "logs", "ssm"}


def test_isolated_builds_may_open_https_only(isolated) -> None:
    _, _, template = isolated
    _, project = _only(template.find_resources("AWS::CodeBuild::Project"))
    (group_ref,) = project["Properties"]["VpcConfig"]["SecurityGroupIds"]
    group_id = group_ref["Fn::GetAtt"][0]
    inline = template.find_resources("AWS::EC2::SecurityGroup")[group_id]["Properties"]["SecurityGroupEgress"]
    separate = [r["Properties"] for r in template.find_resources("AWS::EC2::SecurityGroupEgress").values()
                if r["Properties"]["GroupId"] == {"Fn::GetAtt": [group_id, "GroupId"]}]
    assert inline + separate
    assert all((rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 443, 443)
               for rule in inline + separate)


def test_isolated_builds_may_attach_interfaces_only_in_their_subnets(isolated) -> None:
    _, _, template = isolated
    role_id, _ = _build_role(template)
    statements = _statements_of(template, role_id)
    assert _actions(statements) == {"logs:CreateLogStream", "logs:PutLogEvents", "ssm:GetParameters", "kms:Decrypt",
                                    "ec2:CreateNetworkInterfacePermission"} | VPC_NETWORK_ACTIONS
    (permission,) = [s for s in statements if s["Action"] == "ec2:CreateNetworkInterfacePermission"]
    condition = permission["Condition"]["StringEquals"]
    assert condition["ec2:AuthorizedService"] == "codebuild.amazonaws.com"
    assert len(condition["ec2:Subnet"]) == 2


def _endpoint_policy(template: Template, service: str) -> list[dict[str, Any]]:
    (endpoint,) = [e["Properties"] for e in template.find_resources("AWS::EC2::VPCEndpoint").values()
                   if f".{service}" in json.dumps(e["Properties"]["ServiceName"])]
    return endpoint["PolicyDocument"]["Statement"]


def _bucket_objects(template: Template, pattern: str) -> dict[str, Any]:
    """The ARN pattern of the artifact bucket's objects matching `pattern`."""
    bucket_id = template.find_outputs("ArtifactBucketName")["ArtifactBucketName"]["Value"]["Ref"]
    return {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, f"/{pattern}"]]}


def test_isolated_builds_reach_through_s3_only_the_keys_of_their_test_runs(isolated) -> None:
    _, _, template = isolated
    assert _endpoint_policy(template, "s3") == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Principal": {"AWS": "*"},
         "Resource": [_bucket_objects(template, "runs/*/execute/*"), _bucket_objects(template, "runs/*/verify/*")]},
        {"Action": "s3:PutObject", "Effect": "Allow", "Principal": {"AWS": "*"},
         "Resource": [_bucket_objects(template, "runs/*/execute/builds/*"),
                      _bucket_objects(template, "runs/*/verify/builds/*")]},
    ]
    # The keys the code makes match, for both stages that start builds (workflow/builds.py): the
    # input tarball is read, the output written; no other stage's artifact, no upload.
    assert set(BUILD_STAGES) == {Stage.EXECUTE, Stage.VERIFY}
    for stage in BUILD_STAGES:
        read = artifact_key("r", stage, "test-input.tar.gz", "ab" * 32)
        written = f"runs/r/{stage.value}/builds/{'cd' * 16}-1/output.tar.gz"
        assert any(fnmatch(read, keys) for keys in BUILD_READS)
        assert any(fnmatch(written, keys) for keys in BUILD_WRITES)
    for elsewhere in ("repositories/" + "ab" * 32 + ".tar.gz", artifact_key("r", Stage.PLAN, "plan.json", "ab" * 32)):
        assert not any(fnmatch(elsewhere, keys) for keys in BUILD_READS + BUILD_WRITES)


def test_isolated_builds_reach_through_ssm_only_the_output_grants(isolated) -> None:
    _, _, template = isolated
    assert _endpoint_policy(template, "ssm") == [
        {"Action": "ssm:GetParameters", "Effect": "Allow", "Principal": {"AWS": "*"}, "Resource": _grant_parameters()},
    ]


def test_isolated_builds_reach_through_logs_only_their_own_log_streams(isolated) -> None:
    _, _, template = isolated
    assert _endpoint_policy(template, "logs") == [{
        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Effect": "Allow", "Principal": {"AWS": "*"},
        "Resource": _log_streams(template),
    }]


def test_rejected_traffic_of_isolated_builds_is_logged(isolated) -> None:
    _, _, template = isolated
    (flow_log,) = template.find_resources("AWS::EC2::FlowLog").values()
    assert flow_log["Properties"]["TrafficType"] == "REJECT"


def test_the_isolated_stack_is_clean_for_cdk_nag(isolated) -> None:
    app, stack, _ = isolated
    report = AwsSolutionsChecks(app, verbose=True).validate_scope(stack)
    findings = [f"{v.rule_name}: {r.construct_path}" for v in report.violations for r in v.violating_resources]
    assert report.success and findings == []
