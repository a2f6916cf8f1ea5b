"""The run state machine, loaded from statemachines/run.asl.json, the review keeper's schedule, and
the rule that tells waiting stages their test build ended."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Duration, Validations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agentledger.adapters.codebuild import BUILD_STATE_CHANGE, ENDED_BUILD_STATUSES
from agentledger.deploy import STATE_MACHINE_FILE
from agentledger.deploy.constructs.functions import LOG_RETENTION, Functions, wildcard_resource_finding
from agentledger.limits import REVIEW_KEEPER_INTERVAL_MINUTES

if TYPE_CHECKING:
    from agentledger.deploy.constructs.build_sandbox import BuildSandbox

DEFINITION_FILE = STATE_MACHINE_FILE
REVIEW_KEEPER_INTERVAL = Duration.minutes(REVIEW_KEEPER_INTERVAL_MINUTES)


class Workflow(Construct):
    """One STANDARD execution per run attempt; every event is logged, without the states' input and
    output: the review task's parameters carry its task token (sendTaskSuccess with it is a
    decision), and the ledger holds the data a reader needs, behind the API's authorization."""

    def __init__(self, scope: Construct, construct_id: str, *, functions: Functions,
                 build_sandbox: BuildSandbox) -> None:
        super().__init__(scope, construct_id)
        tasks = functions.state_machine_tasks

        execution_logs = logs.LogGroup(self, "ExecutionLogs", retention=LOG_RETENTION)
        self.state_machine = sfn.StateMachine(
            self,
            "RunStateMachine",
            definition_body=sfn.DefinitionBody.from_file(str(DEFINITION_FILE)),
            definition_substitutions={
                f"{name}Arn": function.function_arn for name, function in tasks.items()
            },
            state_machine_type=sfn.StateMachineType.STANDARD,
            logs=sfn.LogOptions(
                destination=execution_logs,
                level=sfn.LogLevel.ALL,
                include_execution_data=False,
            ),
            tracing_enabled=True,
        )
        # The unqualified ARNs the definition calls, and nothing else (no versions, no aliases).
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[function.function_arn for function in tasks.values()],
            )
        )
        Validations.of(self.state_machine.role).acknowledge(
            Acknowledgment(
                id=wildcard_resource_finding("*"),
                reason="CloudWatch Logs delivery (logs:*LogDelivery, resource policies) and "
                "X-Ray tracing actions support no resource-level permissions; Step Functions "
                "requires them on '*' to deliver execution logs and traces.",
            )
        )

        # Pending reviews wait on a task token: the keeper heartbeats them and fails stale ones.
        events.Rule(
            self,
            "ReviewKeeperSchedule",
            description="Heartbeat pending reviews and fail the stale ones",
            schedule=events.Schedule.rate(REVIEW_KEEPER_INTERVAL),
            targets=[targets.LambdaFunction(functions.review_keeper)],
        )

        # A stage waiting for its test build is parked on a task token; the build's end answers it.
        events.Rule(
            self,
            "TestBuildEnded",
            description="Answer the stages waiting for a test build that ended, and offer its room",
            event_pattern=events.EventPattern(
                source=["aws.codebuild"],
                detail_type=[BUILD_STATE_CHANGE],
                detail={"project-name": [build_sandbox.project.project_name],
                        "build-status": list(ENDED_BUILD_STATUSES)},
            ),
            targets=[targets.LambdaFunction(functions.build_ended, retry_attempts=8)],
        )
