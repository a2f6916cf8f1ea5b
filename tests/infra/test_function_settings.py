"""Each function of the synthesized stack against the settings model its handler reads
(functions/agentledger/config.py): the stack sets every variable the model requires, nothing the
model does not read, and none of the variables the model leaves to the local runtime."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

import pytest

from agentledger.deploy.constructs.functions import FUNCTION_SPECS
from agentledger.handlers.wiring import HANDLER_SETTINGS

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentledger.config import FunctionSettings

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]

# Read by Powertools itself, not by a settings model.
POWERTOOLS_VARIABLES = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}
# What a reference to a resource (a table name, an ARN) resolves to at deploy time, for parsing.
RESOLVED_REFERENCE = "resolved-at-deploy"


def settings_of(handler: str) -> type[FunctionSettings]:
    """The model the handler reads: its module records it as the handler is decorated."""
    importlib.import_module(handler.rpartition(".")[0])
    return HANDLER_SETTINGS[handler]


def _environment(resources: Callable[[str], dict[str, Any]], name: str) -> tuple[str, dict[str, Any]]:
    properties = resources("AWS::Lambda::Function")[name]["Properties"]
    return properties["Handler"], properties["Environment"]["Variables"]


@pytest.mark.parametrize("name", [spec.name for spec in FUNCTION_SPECS])
def test_the_stack_sets_exactly_what_the_function_settings_require(resources, name: str) -> None:
    handler, variables = _environment(resources, name)
    model = settings_of(handler)
    required = {variable for variable, is_required in model.variables().items() if is_required}
    local_only = set(model.variables()) - required
    set_by_stack = set(variables) - POWERTOOLS_VARIABLES
    assert {
        "required but not set": required - set_by_stack,
        "set but read by no model": set_by_stack - set(model.variables()),
        "left to the local runtime but set": set_by_stack & local_only,
    } == {"required but not set": set(), "set but read by no model": set(), "left to the local runtime but set": set()}


@pytest.mark.parametrize("name", [spec.name for spec in FUNCTION_SPECS])
def test_the_values_the_stack_sets_parse_into_the_function_settings(resources, monkeypatch, name: str) -> None:
    handler, variables = _environment(resources, name)
    # The function's environment alone, as Lambda gives it.
    monkeypatch.setattr(os, "environ", {
        key: value if isinstance(value, str) else RESOLVED_REFERENCE for key, value in variables.items()})
    settings_of(handler).from_env()

