"""Who may call which route: a managed policy per duty, to attach to people's users or roles.
The service itself enforces what IAM cannot express (a requester may not approve its own run)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from constructs import Construct

from agentledger.deploy.constructs import logical_id
from agentledger.deploy.constructs.api import STAGE_NAME
from agentledger.deploy.constructs.functions import wildcard_resource_finding

READ = (("GET", "/runs"), ("GET", "/runs/{run_id}"), ("GET", "/openapi.json"))
# Each duty's routes, as the api function's resolver names them (a test checks they exist).
DUTIES: dict[str, tuple[tuple[str, str], ...]] = {
    "Requester": (*READ, ("POST", "/uploads"), ("POST", "/runs")),
    "Reviewer": (*READ, ("POST", "/runs/{run_id}/review")),
    "Operator": (*READ, ("POST", "/runs/{run_id}/resume"), ("POST", "/runs/{run_id}/cancel")),
}


def execute_api_path(path: str) -> str:
    """`/runs/{run_id}/review` as an execute-api resource path: each placeholder one segment."""
    return "/".join("*" if part.startswith("{") else part for part in path.split("/"))


class AccessPolicies(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, rest_api: apigw.RestApi) -> None:
        super().__init__(scope, construct_id)
        self.policies: dict[str, iam.ManagedPolicy] = {}
        for duty, routes in DUTIES.items():
            resources = [rest_api.arn_for_execute_api(method, execute_api_path(path), STAGE_NAME)
                         for method, path in routes]
            policy = iam.ManagedPolicy(
                self, duty,
                description=f"agentledger {duty.lower()}: {', '.join(f'{m} {p}' for m, p in routes)}",
                statements=[iam.PolicyStatement(actions=["execute-api:Invoke"], resources=resources)],
            )
            api_id = f"<{logical_id(rest_api)}>"
            for method, path in routes:
                if "*" in execute_api_path(path):
                    Validations.of(policy).acknowledge(Acknowledgment(
                        id=wildcard_resource_finding(
                            f"arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:{api_id}"
                            f"/{STAGE_NAME}/{method}{execute_api_path(path)}"),
                        reason="The wildcard is one path segment, the run id, of a route this duty may call.",
                    ))
            self.policies[duty] = policy
