"""AgentLedgerStack: wires the constructs together; every resource lives in a construct."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.constructs.api import Api
from infra.constructs.functions import Functions
from infra.constructs.notifications import Notifications
from infra.constructs.observability import Observability
from infra.constructs.storage import Storage
from infra.constructs.workflow import Workflow


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
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)

        storage = Storage(self, "Storage")
        notifications = Notifications(
            self,
            "Notifications",
            github_api_url=github_api_url,
            github_repository=github_repository,
        )
        functions = Functions(
            self,
            "Functions",
            storage=storage,
            notifications=notifications,
            environment_name=environment_name,
        )
        workflow = Workflow(self, "Workflow", functions=functions)
        functions.connect_state_machine(workflow.state_machine)
        api = Api(self, "Api", handler=functions.api)
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
