"""The members of moto's that the local runtime replaces (infra/agentledger/local/moto_seams.py), and the
private ones its replacements call, are still moto's with the signatures the replacements were
written against: an upgrade of moto that removes or changes one fails here, naming it."""
from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest
from moto.codebuild.responses import CodeBuildResponse
from moto.core.serialize import BaseJSONSerializer
from moto.dynamodb.models.table import Table
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
    StateTaskServiceLambda,
)
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from agentledger.local import moto_scale
from agentledger.local.moto_seams import PARSE_DEFINITION, SEAMS, Seam

pytestmark = pytest.mark.integration

# What the replacements call of moto's own internals (found on the class, its own or inherited),
# as they call it.
CALLED: dict[tuple[type, str], str] = {
    (StateTaskServiceLambda, "_error_cause_from_client_error"): "(client_error)",  # moto_fixes
    (CallbackEndpoint, "get_outcome"): "(self)",  # moto_fixes
    (BaseJSONSerializer, "_default_serialize"): "(self, serialized, value, shape, key)",  # moto_scale
    (Table, "get_item"): "(self, hash_key, range_key=None, projection_expression=None)",  # moto_scale
    (Table, "get_index"): "(self, index_name, error_if_not=False)",  # moto_scale
    (CodeBuildResponse, "_get_param"): "(self, param_name, if_none=None)",  # codebuild
    (Preprocessor, "visit"): "(self, tree)",  # moto_scale
}


def shape(member: Any) -> str:
    """A member as Seam.expected writes it: a callable's parameters without annotations, or a module's name."""
    if isinstance(member, ModuleType):
        return f"module {member.__name__}"
    signature = inspect.signature(member)
    parameters = [parameter.replace(annotation=inspect.Parameter.empty) for parameter in signature.parameters.values()]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))


@pytest.mark.parametrize("seam", SEAMS, ids=str)
def test_every_replaced_member_is_still_moto_s_as_its_replacement_expects(seam: Seam) -> None:
    assert seam.moto_own is not None, f"moto has no {seam} any more: its replacement in moto_seams replaces nothing"
    assert shape(seam.moto_own) == seam.expected, f"moto's {seam} changed: the replacement was written against it"


@pytest.mark.parametrize(("owner", "name"), CALLED, ids=[f"{owner.__qualname__}.{name}" for owner, name in CALLED])
def test_every_internal_member_a_replacement_calls_is_still_there_as_it_calls_it(owner: type, name: str) -> None:
    member = getattr(owner, name, None)
    assert member is not None, f"moto has no {owner.__module__}.{owner.__qualname__}.{name} any more"
    assert shape(member) == CALLED[owner, name], f"moto's {owner.__qualname__}.{name} changed"



def test_a_definition_is_parsed_once_and_each_execution_gets_a_program_of_its_own() -> None:
    parsed: list[str] = []

    def moto_parse(definition: str) -> Any:
        parsed.append(definition)
        return PARSE_DEFINITION.moto_own(definition)

    parse = moto_scale.definitions_are_parsed_once(moto_parse).__func__
    definition = '{"StartAt": "Only", "States": {"Only": {"Type": "Pass", "Result": 1, "End": true}}}'
    (first, first_tree), (second, second_tree) = parse(definition), parse(definition)
    assert parsed == [definition]
    assert second_tree is first_tree
    assert second is not first and type(second) is type(first)
    assert second.start_at.start_at_name == first.start_at.start_at_name == "Only"
    parse('{"StartAt": "Other", "States": {"Other": {"Type": "Succeed"}}}')
    assert len(parsed) == 2
