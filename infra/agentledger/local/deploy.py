"""Deploy a synthesized cloud assembly into moto, as `cdk deploy` would into an account."""
from __future__ import annotations

import io
import json
import logging
import re
import secrets
import sys
import warnings
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

STACK_NAME = "AgentLedgerStack"
BOOTSTRAP_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION = "30"


@dataclass(frozen=True)
class DeployedStack:
    outputs: dict[str, str]
    state_machine_arn: str
    functions: dict[str, str]  # logical id -> function name
    build_limits: dict[str, int]  # CodeBuild project name -> its concurrent build limit


def _zip_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def _publish_assets(assembly: Path, account: str, region: str) -> str:
    """Create the bootstrap bucket and upload the file assets, as `cdk deploy` publishes them."""
    s3 = boto3.client("s3", region_name=region)
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{account}-{region}"
    s3.create_bucket(Bucket=bucket)
    boto3.client("ssm", region_name=region).put_parameter(
        Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True)
    manifest = json.loads((assembly / f"{STACK_NAME}.assets.json").read_text())
    for asset in manifest.get("files", {}).values():
        source = assembly / asset["source"]["path"]
        body = _zip_directory(source) if asset["source"].get("packaging") == "zip" else source.read_bytes()
        for destination in asset["destinations"].values():
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)
    return bucket


def _resolve_arn(value: Any, resources: dict[str, str], template: dict[str, Any], region: str) -> str:
    """Fn::GetAtt [X, Arn] for the resource types the state machine's substitutions use."""
    logical, attribute = value["Fn::GetAtt"]
    if attribute != "Arn":
        raise ValueError(f"cannot resolve Fn::GetAtt {logical}.{attribute} locally")
    kind = template["Resources"][logical]["Type"]
    physical = resources[logical]
    if kind == "AWS::Lambda::Function":
        function = boto3.client("lambda", region_name=region).get_function(FunctionName=physical)
        return function["Configuration"]["FunctionArn"]
    if kind == "AWS::IAM::Role":
        return boto3.client("iam", region_name=region).get_role(RoleName=physical)["Role"]["Arn"]
    raise ValueError(f"cannot resolve the ARN of a {kind} locally")


def _create_state_machine(template: dict[str, Any], resources: dict[str, str], bucket: str, region: str) -> str:
    """moto's CloudFormation puts state machines in a backend that does not execute them; create
    it again through the Step Functions API, under the same name (so the same ARN the functions
    were given), from the same definition file and resolved substitutions."""
    sfn = boto3.client("stepfunctions", region_name=region)
    s3 = boto3.client("s3", region_name=region)
    machines = {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::StepFunctions::StateMachine"}
    if len(machines) != 1:
        raise ValueError(f"expected one state machine in the template, found {len(machines)}")
    logical, resource = next(iter(machines.items()))
    props = resource["Properties"]
    location = props["DefinitionS3Location"]
    key = location["Key"]
    definition = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    for name, value in props.get("DefinitionSubstitutions", {}).items():
        definition = definition.replace("${" + name + "}", _resolve_arn(value, resources, template, region))
    unresolved = sorted(set(re.findall(r"\$\{(\w+)\}", definition)))
    if unresolved:
        raise ValueError(f"state machine definition has unresolved substitutions: {unresolved}")
    role_arn = _resolve_arn(props["RoleArn"], resources, template, region)
    name = resources[logical].rsplit(":", 1)[-1]
    return sfn.create_state_machine(name=name, definition=definition, roleArn=role_arn,
                                    type=props.get("StateMachineType", "STANDARD"))["stateMachineArn"]


@contextmanager
def _quiet_moto() -> Iterator[None]:
    """moto names each resource type it does not model, many times over; deploy prints one
    summary line of what it skipped instead."""
    moto_logger = logging.getLogger("moto")
    level = moto_logger.level
    moto_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Tried to parse", category=UserWarning)
            yield
    finally:
        moto_logger.setLevel(level)


def _create_unmodelled_resources(template: dict[str, Any], region: str,
                                 account: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Resources moto's CloudFormation does not model, created through their own API (secrets
    now; CodeBuild projects, which need their role, after the stack: see `_create_projects`); the
    template's references to them are replaced by their names and ARNs."""
    resolved: dict[str, str] = {}
    arns: dict[str, str] = {}
    remaining = {}
    projects: dict[str, dict[str, Any]] = {}
    for logical, resource in template["Resources"].items():
        if resource["Type"] == "AWS::CodeBuild::Project":
            name = resource.get("Properties", {}).get("Name") or f"{STACK_NAME}-{logical}"
            resolved[logical] = name
            arns[logical] = f"arn:aws:codebuild:{region}:{account}:project/{name}"
            projects[name] = resource.get("Properties", {})
        elif resource["Type"] == "AWS::SecretsManager::Secret":
            props = resource.get("Properties", {})
            # As CloudFormation does for GenerateSecretString: a fresh random value.
            value = (secrets.token_urlsafe(48) if "GenerateSecretString" in props
                     else props.get("SecretString", "placeholder"))
            created = boto3.client("secretsmanager", region_name=region).create_secret(
                Name=props.get("Name", f"{STACK_NAME}-{logical}"), Description=props.get("Description", ""),
                SecretString=value)
            resolved[logical] = created["ARN"]
            arns[logical] = created["ARN"]
        else:
            remaining[logical] = resource

    def substitute(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Ref"} and node["Ref"] in resolved:
                return resolved[node["Ref"]]
            if set(node) == {"Fn::GetAtt"} and node["Fn::GetAtt"][0] in arns and node["Fn::GetAtt"][1] == "Arn":
                return arns[node["Fn::GetAtt"][0]]
            return {k: substitute(v) for k, v in node.items()}
        if isinstance(node, list):
            return [substitute(v) for v in node]
        return node

    return substitute({**template, "Resources": remaining}), projects


def _create_projects(projects: dict[str, dict[str, Any]], resources: dict[str, str], template: dict[str, Any],
                     region: str) -> None:
    """CodeBuild projects through CodeBuild's API, once the roles they run as exist."""
    codebuild = boto3.client("codebuild", region_name=region)
    for name, props in projects.items():
        environment = props["Environment"]
        codebuild.create_project(
            name=name,
            description=props.get("Description", ""),
            source={"type": props["Source"]["Type"], "buildspec": props["Source"].get("BuildSpec", "")},
            artifacts={"type": props.get("Artifacts", {}).get("Type", "NO_ARTIFACTS")},
            environment={"type": environment["Type"], "image": environment["Image"],
                         "computeType": environment["ComputeType"],
                         "privilegedMode": bool(environment.get("PrivilegedMode", False)),
                         "environmentVariables": [{"name": v["Name"], "value": str(v["Value"]), "type": "PLAINTEXT"}
                                                  for v in environment.get("EnvironmentVariables", [])]},
            serviceRole=_resolve_arn(props["ServiceRole"], resources, template, region),
            timeoutInMinutes=int(props.get("TimeoutInMinutes", 60)),
            **({"concurrentBuildLimit": int(props["ConcurrentBuildLimit"])} if "ConcurrentBuildLimit" in props else {}),
        )


def deploy(assembly: Path, region: str) -> DeployedStack:
    with _quiet_moto():
        return _deploy(assembly, region)


def _deploy(assembly: Path, region: str) -> DeployedStack:
    account = boto3.client("sts", region_name=region).get_caller_identity()["Account"]
    bucket = _publish_assets(assembly, account, region)
    template, projects = _create_unmodelled_resources(
        json.loads((assembly / f"{STACK_NAME}.template.json").read_text()), region, account)
    template_text = json.dumps(template)
    cfn = boto3.client("cloudformation", region_name=region)
    cfn.create_stack(StackName=STACK_NAME, TemplateBody=template_text,
                     Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"])
    stack = cfn.describe_stacks(StackName=STACK_NAME)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(f"local stack ended in {stack['StackStatus']}: {stack.get('StackStatusReason', '')}")
    resources: dict[str, str] = {}
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=STACK_NAME):
        for summary in page["StackResourceSummaries"]:
            resources[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    missing = sorted(k for k, r in template["Resources"].items()
                     if k not in resources and r["Type"] != "AWS::CDK::Metadata")
    if missing:
        print(f"agentledger: moto skipped {len(missing)} resource(s) it does not model: {', '.join(missing[:8])}"
              f"{'…' if len(missing) > 8 else ''}", file=sys.stderr)
    _create_projects(projects, resources, template, region)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    state_machine_arn = _create_state_machine(template, resources, bucket, region)
    functions = {k: resources[k] for k, r in template["Resources"].items()
                 if r["Type"] == "AWS::Lambda::Function" and k in resources}
    build_limits = {name: int(props["ConcurrentBuildLimit"]) for name, props in projects.items()
                    if "ConcurrentBuildLimit" in props}
    return DeployedStack(outputs=outputs, state_machine_arn=state_machine_arn, functions=functions,
                         build_limits=build_limits)
