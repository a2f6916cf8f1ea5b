"""AgentLedgerStack: wires the constructs together; every resource lives in a construct."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import CfnOutput, Stack

from agentledger.deploy.constructs.access import AccessPolicies
from agentledger.deploy.constructs.api import Api
from agentledger.deploy.constructs.build_sandbox import BuildSandbox
from agentledger.deploy.constructs.functions import Concurrency, Functions, PlannerConfig
from agentledger.deploy.constructs.notifications import Notifications
from agentledger.deploy.constructs.observability import Observability
from agentledger.deploy.constructs.storage import Storage
from agentledger.deploy.constructs.workflow import Workflow
from agentledger.testrun.layout import build_timeout_minutes

if TYPE_CHECKING:
    from constructs import Construct

    from agentledger.source import ArchiveLimits


class AgentLedgerStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment_name: str,
        github_api_url: str,
        github_repository: str,
        review_alarm_seconds: int,
        test_timeout_limit_seconds: int,
        build_computes: tuple[str, ...],
        build_images: tuple[str, ...],
        archive_limits: ArchiveLimits,
        concurrency: Concurrency,
        artifact_link_seconds: int,
        isolated_test_builds: bool,
        allow_self_approval: bool,
        github_base_branch: str,
        review_empty_plans: bool,
        agent_spec: str,
        planner: PlannerConfig,
        max_replans: int,
        workspace_retention_hours: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)

        storage = Storage(self, "Storage")
        notifications = Notifications(
            self,
            "Notifications",
            github_api_url=github_api_url,
            github_repository=github_repository,
            github_base_branch=github_base_branch,
        )
        build_sandbox = BuildSandbox(
            self,
            "BuildSandbox",
            timeout_minutes=build_timeout_minutes(test_timeout_limit_seconds),
            isolated=isolated_test_builds,
            artifact_bucket=storage.artifact_bucket,
            concurrent_builds=concurrency.test_builds,
        )
        functions = Functions(
            self,
            "Functions",
            storage=storage,
            notifications=notifications,
            build_sandbox=build_sandbox,
            test_timeout_limit_seconds=test_timeout_limit_seconds,
            build_computes=build_computes,
            build_images=build_images,
            archive_limits=archive_limits,
            concurrency=concurrency,
            artifact_link_seconds=artifact_link_seconds,
            environment_name=environment_name,
            allow_self_approval=allow_self_approval,
            review_empty_plans=review_empty_plans,
            agent_spec=agent_spec,
            planner=planner,
            max_replans=max_replans,
            workspace_retention_hours=workspace_retention_hours,
        )
        workflow = Workflow(self, "Workflow", functions=functions, build_sandbox=build_sandbox)
        functions.connect_state_machine(workflow.state_machine)
        api = Api(self, "Api", handler=functions.api)
        access = AccessPolicies(self, "Access", rest_api=api.rest_api)
        observability = Observability(
            self,
            "Observability",
            state_machine=workflow.state_machine,
            review_alarm_seconds=review_alarm_seconds,
        )

        CfnOutput(self, "ApiUrl", value=api.rest_api.url)
        CfnOutput(self, "StateMachineArn", value=workflow.state_machine.state_machine_arn)
        CfnOutput(self, "LedgerTableName", value=storage.ledger_table.table_name)
        CfnOutput(self, "ArtifactBucketName", value=storage.artifact_bucket.bucket_name)
        CfnOutput(self, "IdempotencyTableName", value=storage.idempotency_table.table_name)
        CfnOutput(self, "NotificationTopicArn", value=notifications.topic.topic_arn)
        CfnOutput(self, "GitHubTokenSecretArn", value=notifications.github_token_secret.secret_arn)
        CfnOutput(self, "AlarmTopicArn", value=observability.alarm_topic.topic_arn)
        CfnOutput(self, "DashboardName", value=observability.dashboard.dashboard_name)
        CfnOutput(self, "TestBuildProjectName", value=build_sandbox.project.project_name)
        for duty, policy in access.policies.items():
            CfnOutput(self, f"{duty}PolicyArn", value=policy.managed_policy_arn)
