"""The test-build sandbox: a CodeBuild project that runs a repository's install and test commands.

The code it runs is untrusted, so its role can do nothing but write its own log streams. It gets
its input and returns its results through presigned links that the verify function signs for one
test run's objects (a GET of the input tarball, a POST limited to the output key and a size), so
the build can read no other run's data and write nowhere else. With `isolated`, it also runs in a
VPC without a route out: it reaches S3 and CloudWatch Logs through endpoints only, whose policies
let through this deployment's test-run keys and this project's log streams and nothing else (no
other bucket or log group, even with credentials the code under test brought along).
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, ArnFormat, Duration, Stack, Validations
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from agentledger.artifacts import stage_prefix
from agentledger.models import Stage
from agentledger.testrun.config import DEFAULT_COMPUTE, DEFAULT_IMAGE
from agentledger.testrun.layout import BUILDSPEC

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
HTTPS = ec2.Port.tcp(443)
LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"]
# The keys a build's links name, under each run's verify prefix (workflow/verification.py and the
# CodeBuild adapter write them): it reads its input tarball and its output grant, and writes its
# results under builds/.
BUILD_READS = f"{stage_prefix('*', Stage.VERIFY)}*"
BUILD_WRITES = f"{stage_prefix('*', Stage.VERIFY)}builds/*"
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
                f"<AWS::AccountId>:log-group:<{stack.get_logical_id(self.log_group.node.default_child)}>"
                ":log-stream:*]",
                reason="Each build writes a stream CodeBuild names after the build's id, which no "
                "IAM variable yields; the streams are those of this project's own log group only.",
            )
        )
        network = (
            _IsolatedNetwork(self, "Network", artifact_bucket=artifact_bucket, log_streams=self.log_streams)
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
            **(network.project_properties() if network else {}),
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


class _IsolatedNetwork(Construct):
    """Private subnets without a NAT or internet gateway; S3 through a gateway endpoint and
    CloudWatch Logs through an interface endpoint, both on HTTPS only."""

    def __init__(
        self, scope: Construct, construct_id: str, *, artifact_bucket: s3.IBucket, log_streams: str
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
                resources=[artifact_bucket.arn_for_objects(BUILD_READS)],
            )
        )
        s3_endpoint.add_to_policy(
            iam.PolicyStatement(
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[artifact_bucket.arn_for_objects(BUILD_WRITES)],
            )
        )
        endpoint_group = ec2.SecurityGroup(
            self, "EndpointGroup", vpc=self.vpc, allow_all_outbound=False,
            description="CloudWatch Logs endpoint: HTTPS from test builds",
        )
        self.logs_endpoint = self.vpc.add_interface_endpoint(
            "Logs",
            service=ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
            security_groups=[endpoint_group],
            open=False,
        )
        self.logs_endpoint.add_to_policy(
            iam.PolicyStatement(principals=[iam.AnyPrincipal()], actions=LOG_ACTIONS, resources=[log_streams])
        )
        self.build_group = ec2.SecurityGroup(
            self, "BuildGroup", vpc=self.vpc, allow_all_outbound=False,
            description="Test builds: HTTPS to S3 and CloudWatch Logs endpoints only",
        )
        # The route tables, not this rule, are what keep builds in: the subnets' only routes are
        # the VPC itself and S3's gateway endpoint. (S3's prefix list id is per region and would
        # need a lookup that an environment-agnostic stack cannot make.)
        self.build_group.add_egress_rule(ec2.Peer.any_ipv4(), HTTPS, "S3 through the gateway endpoint")
        self.build_group.connections.allow_to(endpoint_group, HTTPS, "CloudWatch Logs endpoint")

    def project_properties(self) -> dict[str, object]:
        return {
            "vpc": self.vpc,
            "subnet_selection": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            "security_groups": [self.build_group],
        }

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
