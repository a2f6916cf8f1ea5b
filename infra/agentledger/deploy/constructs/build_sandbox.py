"""The test-build sandbox: a CodeBuild project that runs a repository's install and test commands.

The code it runs is untrusted, so its role can do little more than write its own log streams. It
gets its input and returns its results through presigned links that the stage starting it signs
for one test run's objects (a GET of the input tarball, a POST limited to the output key and a
size), so the build can read no other run's data and write nowhere else. The POST (the output
grant) reaches the build as a SecureString parameter under `grant_path`, encrypted with
`grant_key`: the build role may read parameters there (by name: it cannot list them), and is the
only principal the key lets decrypt. With `isolated`, it also runs in a
VPC without a route out: it reaches S3 and CloudWatch Logs through endpoints only, whose policies
let through this deployment's test-run keys and this project's log streams and nothing else (no
other bucket or log group, even with credentials the code under test brought along).
"""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import Acknowledgment, ArnFormat, Duration, Stack, Validations
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from agentledger.artifacts import stage_prefix
from agentledger.deploy.constructs import logical_id
from agentledger.states import BUILD_STAGES
from agentledger.testrun.config import DEFAULT_COMPUTE, DEFAULT_IMAGE
from agentledger.testrun.layout import BUILDSPEC

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
HTTPS = ec2.Port.tcp(443)
LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"]
# The keys a build's links name, under the prefix of each stage that starts builds
# (workflow/builds.py writes them): it reads its input tarball, and writes its results under builds/.
BUILD_READS = [f"{stage_prefix('*', stage)}*" for stage in BUILD_STAGES]
BUILD_WRITES = [f"{stage_prefix('*', stage)}builds/*" for stage in BUILD_STAGES]
GRANT_READ_ACTIONS = ["ssm:GetParameters"]  # how CodeBuild resolves a PARAMETER_STORE variable
# What CodeBuild asks of a project role to attach a build's network interface in a VPC.
VPC_NETWORK_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DeleteNetworkInterface",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeVpcs",
)


class BuildSandbox(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        timeout_minutes: int,
        isolated: bool,
        artifact_bucket: s3.IBucket,
        concurrent_builds: int,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.grant_path = f"/{stack.stack_name}/output-grants"
        self.grant_parameters = stack.format_arn(
            service="ssm", resource="parameter", resource_name=f"{self.grant_path[1:]}/*"
        )
        self.log_group = logs.LogGroup(self, "BuildLogs", retention=LOG_RETENTION)
        # The streams of this project's own group, and no more: CodeBuild names a build's stream
        # after the build's id (its UUID), which no IAM policy variable yields (codebuild:buildArn
        # is the whole ARN, and IAM cannot take part of it), so a build cannot be held to its own
        # stream. It could append to another build's stream of this project, never to any other
        # log group; verify reads no log, so no result depends on one.
        self.log_streams = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{self.log_group.log_group_name}:log-stream:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.role = iam.Role(
            self,
            "BuildRole",
            description="Runs untrusted test builds: writes its own logs and nothing else",
            assumed_by=iam.ServicePrincipal(
                "codebuild.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            ),
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=LOG_ACTIONS, resources=[self.log_streams])
        )
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:"
                f"<AWS::AccountId>:log-group:<{logical_id(self.log_group)}>"
                ":log-stream:*]",
                reason="Each build writes a stream CodeBuild names after the build's id, which no "
                "IAM variable yields; the streams are those of this project's own log group only.",
            )
        )
        self.grant_key = self._output_grant_key(stack)
        network = (
            _IsolatedNetwork(self, "Network", artifact_bucket=artifact_bucket, log_streams=self.log_streams,
                             grant_parameters=self.grant_parameters)
            if isolated
            else None
        )
        self.project = codebuild.Project(
            self,
            "TestBuilds",
            description="agentledger test runs: one build per test run's inputs",
            build_spec=codebuild.BuildSpec.from_object(BUILDSPEC),
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxBuildImage.from_code_build_image_id(DEFAULT_IMAGE),
                compute_type=codebuild.ComputeType[DEFAULT_COMPUTE.removeprefix("BUILD_GENERAL1_")],
                privileged=False,
            ),
            timeout=Duration.minutes(timeout_minutes),
            # What the repositories' builds may run at once: the operator's bound on build minutes.
            concurrent_build_limit=concurrent_builds,
            cache=codebuild.Cache.local(codebuild.LocalCacheMode.CUSTOM),
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=self.log_group)
            ),
            # The grants written above are the whole policy: none of the L2's defaults (log
            # groups by name pattern, report groups) are added to it.
            role=self.role.without_policy_updates(),
            **(network.project_properties() if network else _ProjectNetwork()),
        )
        if network:
            network.grant_interfaces(self.project, self.role)
        # CodeBuild checks the role's permissions when the project is created.
        self.project.node.add_dependency(self.role)
        Validations.of(self.project).acknowledge(
            Acknowledgment(
                id="AwsSolutions-CB4",
                reason="The project stores no artifacts (NO_ARTIFACTS) and its cache is local to "
                "the build host; its only outputs leave through presigned S3 links into the "
                "artifact bucket, which is encrypted by its own key policy.",
            )
        )


    def _output_grant_key(self, stack: Stack) -> kms.Key:
        """The key of the output grants: the build role decrypts through SSM, and no one else may
        (the functions that start builds encrypt, and delete a grant without reading it)."""
        key = kms.Key(self, "OutputGrantKey", enable_key_rotation=True,
                      description="Encrypts test builds' output grants; only the build role decrypts")
        key.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["kms:Decrypt"],
                resources=["*"],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": self.role.role_arn}},
            )
        )
        through_ssm = {"StringEquals": {"kms:ViaService": f"ssm.{stack.region}.amazonaws.com"}}
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=GRANT_READ_ACTIONS, resources=[self.grant_parameters])
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["kms:Decrypt"], resources=[key.key_arn], conditions=through_ssm)
        )
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:"
                f"parameter{self.grant_path}/*]",
                reason="Each build's output grant is a parameter named by a random token at run time; "
                "the role reads them by name only (no DescribeParameters or GetParametersByPath).",
            )
        )
        return key

    def grant_start(self, role: iam.IRole) -> None:
        """What a function that starts builds needs for their output grants: write and delete the
        parameters, encrypt (never decrypt) with the key."""
        stack = Stack.of(self)
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["ssm:PutParameter", "ssm:DeleteParameter"],
                                resources=[self.grant_parameters])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["kms:Encrypt", "kms:GenerateDataKey"],
                resources=[self.grant_key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"ssm.{stack.region}.amazonaws.com"}},
            )
        )
        Validations.of(role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:"
                f"parameter{self.grant_path}/*]",
                reason="Each build's output grant is a parameter named by a random token at run time.",
            )
        )


class _ProjectNetwork(TypedDict, total=False):
    """A codebuild.Project's network properties."""

    vpc: ec2.IVpc
    subnet_selection: ec2.SubnetSelection
    security_groups: list[ec2.ISecurityGroup]


class _IsolatedNetwork(Construct):
    """Private subnets without a NAT or internet gateway; S3 through a gateway endpoint and
    CloudWatch Logs through an interface endpoint, both on HTTPS only."""

    def __init__(
        self, scope: Construct, construct_id: str, *, artifact_bucket: s3.IBucket, log_streams: str,
        grant_parameters: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="builds", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
            ],
            flow_logs={
                "rejected": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                        logs.LogGroup(self, "FlowLogs", retention=LOG_RETENTION)
                    ),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        s3_endpoint = self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        # Whoever signed a request, only these objects pass: a build cannot carry data to a
        # bucket of its own (signed with keys it brought), nor read any other of this account's.
        # The links are the verify function's; the endpoint checks what they name.
        s3_endpoint.add_to_policy(
            iam.PolicyStatement(
                principals=[iam.AnyPrincipal()],
                actions=["s3:GetObject"],
                resources=[artifact_bucket.arn_for_objects(keys) for keys in BUILD_READS],
            )
        )
        s3_endpoint.add_to_policy(
            iam.PolicyStatement(
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[artifact_bucket.arn_for_objects(keys) for keys in BUILD_WRITES],
            )
        )
        endpoint_group = ec2.SecurityGroup(
            self, "EndpointGroup", vpc=self.vpc, allow_all_outbound=False,
            description="CloudWatch Logs and SSM endpoints: HTTPS from test builds",
        )
        self.logs_endpoint = self._interface_endpoint(
            "Logs", ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS, endpoint_group, LOG_ACTIONS, log_streams
        )
        # CodeBuild resolves a build's PARAMETER_STORE variables from inside its network.
        self.ssm_endpoint = self._interface_endpoint(
            "Ssm", ec2.InterfaceVpcEndpointAwsService.SSM, endpoint_group, GRANT_READ_ACTIONS, grant_parameters
        )
        self.build_group = ec2.SecurityGroup(
            self, "BuildGroup", vpc=self.vpc, allow_all_outbound=False,
            description="Test builds: HTTPS to S3, CloudWatch Logs and SSM endpoints only",
        )
        # The route tables, not this rule, are what keep builds in: the subnets' only routes are
        # the VPC itself and S3's gateway endpoint. (S3's prefix list id is per region and would
        # need a lookup that an environment-agnostic stack cannot make.)
        self.build_group.add_egress_rule(ec2.Peer.any_ipv4(), HTTPS, "S3 through the gateway endpoint")
        self.build_group.connections.allow_to(endpoint_group, HTTPS, "CloudWatch Logs and SSM endpoints")

    def _interface_endpoint(
        self, endpoint_id: str, service: ec2.InterfaceVpcEndpointAwsService, group: ec2.SecurityGroup,
        actions: list[str], resource: str,
    ) -> ec2.InterfaceVpcEndpoint:
        """An HTTPS endpoint in the builds' subnets that lets through `actions` on `resource` only."""
        endpoint = self.vpc.add_interface_endpoint(endpoint_id, service=service, security_groups=[group], open=False)
        endpoint.add_to_policy(iam.PolicyStatement(principals=[iam.AnyPrincipal()], actions=actions,
                                                   resources=[resource]))
        return endpoint

    def project_properties(self) -> _ProjectNetwork:
        return _ProjectNetwork(vpc=self.vpc,
                               subnet_selection=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
                               security_groups=[self.build_group])

    def grant_interfaces(self, project: codebuild.Project, role: iam.Role) -> None:
        """The role is immutable to the project, so the network permissions the L2 would attach
        are written here: describe calls have no resource scope; attaching an interface is
        limited to this VPC's subnets and to CodeBuild."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(VPC_NETWORK_ACTIONS), resources=["*"])
        )
        stack = Stack.of(self)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ec2:CreateNetworkInterfacePermission"],
                resources=[
                    stack.format_arn(service="ec2", resource="network-interface", resource_name="*")
                ],
                conditions={
                    "StringEquals": {
                        "ec2:Subnet": [
                            stack.format_arn(
                                service="ec2", resource="subnet", resource_name=subnet.subnet_id
                            )
                            for subnet in self.vpc.isolated_subnets
                        ],
                        "ec2:AuthorizedService": "codebuild.amazonaws.com",
                    }
                },
            )
        )
        Validations.of(role).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="CodeBuild attaches a network interface for each build in the VPC; "
                "ec2:Describe* and Create/DeleteNetworkInterface support no resource scope.",
            ),
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:"
                "<AWS::AccountId>:network-interface/*]",
                reason="The interface does not exist before the build; the permission is limited "
                "by condition to this VPC's subnets and to CodeBuild.",
            ),
        )
        Validations.of(project.node.find_child("PolicyDocument")).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="Never deployed: the L2's own network policy is attached to no role (the "
                "project's role is immutable to it), so it is not synthesized; the statements "
                "the role does get are the BuildRole's, acknowledged there.",
            )
        )
