"""One synthesized AgentLedgerStack shared by every infra test (synth takes seconds)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from aws_cdk.assertions import Template

from agentledger.deploy.app import build_app

if TYPE_CHECKING:
    from collections.abc import Callable

    from aws_cdk import App

    from agentledger.deploy.stack import AgentLedgerStack

Statement = dict[str, Any]


@pytest.fixture(scope="session")
def app_and_stack(tmp_path_factory: pytest.TempPathFactory) -> tuple[App, AgentLedgerStack]:
    return build_app(outdir=tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def stack(app_and_stack: tuple[App, AgentLedgerStack]) -> AgentLedgerStack:
    return app_and_stack[1]


@pytest.fixture(scope="session")
def template(stack: AgentLedgerStack) -> Template:
    return Template.from_stack(stack)


@pytest.fixture(scope="session")
def isolated(tmp_path_factory: pytest.TempPathFactory) -> tuple[App, AgentLedgerStack, Template]:
    """The stack with `isolatedTestBuilds`: test builds in a VPC without a route out."""
    app, stack = build_app(context={"isolatedTestBuilds": "true"}, outdir=tmp_path_factory.mktemp("cdk.isolated"))
    return app, stack, Template.from_stack(stack)


@pytest.fixture(scope="session")
def resources(template: Template) -> Callable[[str], dict[str, Any]]:
    """All resources of one CloudFormation type, by logical id."""
    return lambda resource_type: template.find_resources(resource_type)


@pytest.fixture(scope="session")
def logical_id(resources: Callable[[str], dict[str, Any]]) -> Callable[[str, str], str]:
    """The one logical id of the given type that contains the given construct id."""

    def find(resource_type: str, construct_id: str) -> str:
        (match,) = [name for name in resources(resource_type) if construct_id in name]
        return match

    return find


@pytest.fixture(scope="session")
def role_statements(template: Template) -> Callable[[str], list[Statement]]:
    """Every IAM statement attached to the role with the given logical id."""
    policies = template.find_resources("AWS::IAM::Policy")

    def statements(role_logical_id: str) -> list[Statement]:
        return [
            statement
            for policy in policies.values()
            if {"Ref": role_logical_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]

    return statements


@pytest.fixture(scope="session")
def function_statements(
    resources: Callable[[str], dict[str, Any]], role_statements: Callable[[str], list[Statement]]
) -> Callable[[str], list[Statement]]:
    """Every IAM statement of the role of the function with the given logical id."""
    functions = resources("AWS::Lambda::Function")
    return lambda name: role_statements(functions[name]["Properties"]["Role"]["Fn::GetAtt"][0])


@pytest.fixture(scope="session")
def function_actions(
    function_statements: Callable[[str], list[Statement]],
) -> Callable[[str], set[str]]:
    """Every IAM action the function with the given logical id may perform."""

    def actions(name: str) -> set[str]:
        found: set[str] = set()
        for statement in function_statements(name):
            action = statement["Action"]
            found.update(action if isinstance(action, list) else [action])
        return found

    return actions
