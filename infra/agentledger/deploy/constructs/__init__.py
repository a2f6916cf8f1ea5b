"""One construct per concern; AgentLedgerStack only wires them together."""
from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import CfnResource, Stack

if TYPE_CHECKING:
    from constructs import IConstruct


def cfn_resource(construct: IConstruct) -> CfnResource:
    """The CloudFormation resource a construct of the CDK's stands for (its default child)."""
    resource = construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} stands for no one CloudFormation resource")
    return resource


def logical_id(construct: IConstruct) -> str:
    """The logical id of the resource `construct` stands for, as the template (and cdk-nag) names it."""
    return Stack.of(construct).get_logical_id(cfn_resource(construct))
