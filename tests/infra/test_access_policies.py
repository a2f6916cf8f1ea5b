"""The requester, reviewer and operator managed policies: each allows execute-api:Invoke on its
duty's routes of this API's stage and nothing else, and the stack outputs their ARNs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agentledger.deploy.constructs.access import DUTIES, execute_api_path
from agentledger.deploy.constructs.api import STAGE_NAME, resolver_routes

if TYPE_CHECKING:
    from aws_cdk.assertions import Template

pytestmark = pytest.mark.infra


def _policies(template: Template) -> dict[str, dict[str, Any]]:
    return template.find_resources("AWS::IAM::ManagedPolicy")


def _route_of(resource: dict[str, Any]) -> tuple[str, str]:
    """('POST', '/runs/*/review') from the Fn::Join CDK writes for arn_for_execute_api."""
    parts = resource["Fn::Join"][1]
    tail = "".join(part for part in parts if isinstance(part, str)).rsplit(f"/{STAGE_NAME}/", 1)[1]
    method, _, path = tail.partition("/")
    return method, f"/{path}"


@pytest.mark.parametrize("duty", sorted(DUTIES))
def test_each_duty_may_invoke_exactly_its_routes(template: Template, logical_id, duty: str) -> None:
    policy = _policies(template)[logical_id("AWS::IAM::ManagedPolicy", duty)]
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    assert sorted(_route_of(r) for r in resources) == sorted((m, execute_api_path(p)) for m, p in DUTIES[duty])


def test_only_the_reviewer_may_review_only_the_requester_may_create_and_only_the_operator_may_resume_or_cancel(
) -> None:
    holders = {route: {duty for duty, routes in DUTIES.items() if route in routes}
               for routes in DUTIES.values() for route in routes}
    assert holders[("POST", "/runs/{run_id}/review")] == {"Reviewer"}
    assert holders[("POST", "/runs")] == {"Requester"}
    assert holders[("POST", "/runs/{run_id}/resume")] == {"Operator"}
    assert holders[("POST", "/runs/{run_id}/cancel")] == {"Operator"}


def test_the_duties_name_the_api_functions_own_routes() -> None:
    served = {(route.method, route.path) for route in resolver_routes()}
    granted = {route for routes in DUTIES.values() for route in routes}
    assert granted == served  # nothing granted that does not exist, nothing served that nobody may call


def test_the_stack_outputs_each_policy_arn(template: Template, logical_id) -> None:
    outputs = template.find_outputs("*")
    for duty in DUTIES:
        assert outputs[f"{duty}PolicyArn"]["Value"] == {"Ref": logical_id("AWS::IAM::ManagedPolicy", duty)}
