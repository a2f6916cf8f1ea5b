"""A handler module's import is what every Lambda cold start pays for: it loads neither the AWS SDK,
the X-Ray SDK, nor what an invocation builds (handlers/assembly.py: the adapters, the agent, the
workflow). The tracer is built at the first invocation instead, and still traces it, its AWS
calls and whether it was the cold start. How long the import takes is the bench's to measure
(tests/bench/imports.py), never asserted here."""
from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys

import pytest

from agentledger import handlers
from agentledger.deploy import PROJECT_ROOT

# The assembly is what the handlers import lazily, at an invocation.
HANDLER_MODULES = sorted(f"{handlers.__name__}.{module.name}" for module in pkgutil.iter_modules(handlers.__path__)
                         if module.name != "assembly")
LOADED_AT_AN_INVOCATION = ("boto3", "aws_xray_sdk", "agentledger.handlers.assembly", "agentledger.agent",
                           "agentledger.workflow", "aws_lambda_powertools.utilities.idempotency")
# A fresh interpreter: this one may have imported any of them for the tests before this one.
PROBE = """
import sys
import {module}
print(" ".join(sorted(set(sys.modules) & set({loaded!r}))))
"""
FUNCTION_SETTINGS = {"LEDGER_TABLE_NAME": "ledger", "ARTIFACT_BUCKET_NAME": "artifacts",
                     "AGENTLEDGER_ENVIRONMENT": "test", "AGENTLEDGER_MAX_REPLANS": "1",
                     "AGENTLEDGER_ARCHIVE_MAX_MEMBERS": "10", "AGENTLEDGER_ARCHIVE_MAX_BYTES": "10",
                     "AGENTLEDGER_ARCHIVE_MAX_RATIO": "10"}
# What Lambda sets, which turns Powertools' tracing on: a sampled trace this invocation belongs to.
IN_LAMBDA = {"LAMBDA_TASK_ROOT": str(PROJECT_ROOT / "functions"),
             "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
             "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def _run(arguments: list[str], variables: dict[str, str] | None = None) -> str:
    environment = {"PATH": os.environ["PATH"], **(variables or {})}
    return subprocess.run([sys.executable, *arguments], cwd=PROJECT_ROOT, env=environment, capture_output=True,
                          text=True, check=True).stdout


def test_every_handler_module_is_found() -> None:
    expected = {"agentledger.handlers.api", "agentledger.handlers.stages", "agentledger.handlers.builds"}
    assert expected <= set(HANDLER_MODULES)


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_importing_a_handler_module_loads_nothing_only_an_invocation_needs(module: str) -> None:
    probe = PROBE.format(module=module, loaded=LOADED_AT_AN_INVOCATION)
    assert _run(["-c", probe], {"AWS_DEFAULT_REGION": "us-east-1"}).split() == []


def test_the_tracer_built_at_the_first_invocation_traces_it_its_aws_calls_and_the_cold_start() -> None:
    probed = json.loads(_run(["-m", "tests.unit.tracing_probe"], {**FUNCTION_SETTINGS, **IN_LAMBDA}))

    assert probed["xray_loaded_before_first_invocation"] is False
    handlers_traced = [entity for entity in probed["sent"] if entity["name"] == "## probe"]
    assert [entity["annotations"]["ColdStart"] for entity in handlers_traced] == [True, False]
    # boto3 was patched before the invocation made its client: each call is traced inside the handler's.
    calls = [entity for entity in probed["sent"] if entity.get("namespace") == "aws"]
    assert [call["name"] for call in calls] == ["sqs", "sqs"]
    assert [call["parent_id"] for call in calls] == [entity["id"] for entity in handlers_traced]
