"""The local runtime's functions against their settings models: what the local runtime adds to a
function's environment (workspaces, allowed repository roots, the loopback S3 endpoint, the local
GitHub) is read by that function's model, and the deployed function still has all it requires."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.infra.test_function_settings import POWERTOOLS_VARIABLES, settings_of

if TYPE_CHECKING:
    from agentledger.local.runtime import LocalRuntime

pytestmark = pytest.mark.integration


def test_every_local_function_environment_is_read_by_its_settings(runtime: LocalRuntime) -> None:
    assert runtime.stack is not None
    lambda_client = runtime.client("lambda")
    unread, missing = {}, {}
    for function_name in runtime.stack.functions.values():
        config = lambda_client.get_function_configuration(FunctionName=function_name)
        model = settings_of(config["Handler"])
        variables = set(config["Environment"]["Variables"]) - POWERTOOLS_VARIABLES
        required = {name for name, is_required in model.variables().items() if is_required}
        unread[config["Handler"]] = variables - set(model.variables())
        missing[config["Handler"]] = required - variables
    assert {handler: names for handler, names in unread.items() if names} == {}
    assert {handler: names for handler, names in missing.items() if names} == {}
