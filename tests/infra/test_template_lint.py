"""cfn-lint on the synthesized template, as an operator's pipeline would run it: no error and no
warning, in the default stack and with isolated builds, but W3005. That one flags the DependsOn
CDK writes next to a GetAtt on a role (so a resource waits for the role's policy, not only the
role), which is deliberate."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from cfnlint.api import ManualArgs, lint

if TYPE_CHECKING:
    from aws_cdk import App
    from aws_cdk.assertions import Template

    from agentledger.deploy.stack import AgentLedgerStack

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]

CDK_ROLE_DEPENDENCY = "W3005"


def _findings(template: Template) -> list[str]:
    matches = lint(json.dumps(template.to_json()), config=ManualArgs(regions=["us-east-1"],
                                                                     ignore_checks=[CDK_ROLE_DEPENDENCY]))
    return [f"{match.rule.id} {match.message} ({'/'.join(map(str, match.path))})" for match in matches]


def test_the_default_stack_is_clean_for_cfn_lint(template: Template) -> None:
    assert _findings(template) == []


def test_the_isolated_stack_is_clean_for_cfn_lint(isolated: tuple[App, AgentLedgerStack, Template]) -> None:
    assert _findings(isolated[2]) == []
