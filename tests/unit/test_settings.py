"""The functions' settings models: read from the environment once per distinct environment, and a
missing or malformed variable is one readable error that names it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentledger.config import ApiSettings, FunctionSettings, SettingsError, WorkflowSettings

pytestmark = pytest.mark.unit

BASE = {"LEDGER_TABLE_NAME": "ledger", "ARTIFACT_BUCKET_NAME": "bucket", "AGENTLEDGER_ENVIRONMENT": "dev",
        "AGENTLEDGER_MAX_REPLANS": "3", "AGENTLEDGER_ARCHIVE_MAX_MEMBERS": "20000",
        "AGENTLEDGER_ARCHIVE_MAX_BYTES": "1073741824", "AGENTLEDGER_ARCHIVE_MAX_RATIO": "100"}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A function's environment alone, as Lambda gives it."""
    variables = dict(BASE)
    monkeypatch.setattr(os, "environ", variables)
    return variables


def test_a_missing_variable_is_one_error_that_names_it(environ: dict[str, str]) -> None:
    del environ["LEDGER_TABLE_NAME"]
    with pytest.raises(SettingsError) as raised:
        FunctionSettings.from_env()
    assert str(raised.value) == ("FunctionSettings: environment variable LEDGER_TABLE_NAME is not set; "
                                 "the stack must pass it to this function")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_every_bad_variable_is_named_with_its_value(environ: dict[str, str]) -> None:
    environ.update(AGENTLEDGER_MAX_REPLANS="many", ARTIFACT_BUCKET_NAME="")
    with pytest.raises(SettingsError) as raised:
        FunctionSettings.from_env()
    message = str(raised.value)
    assert "environment variable AGENTLEDGER_MAX_REPLANS='many' is not valid" in message
    assert "environment variable ARTIFACT_BUCKET_NAME='' is not valid" in message
    assert "\n" not in message and "pydantic" not in message


def test_the_environment_is_parsed_once_per_distinct_environment(environ: dict[str, str]) -> None:
    first = FunctionSettings.from_env()
    assert FunctionSettings.from_env() is first
    environ["AGENTLEDGER_MAX_REPLANS"] = "5"
    assert FunctionSettings.from_env().max_replans == 5


def test_the_local_runtime_settings_default_to_what_lambda_needs(environ: dict[str, str]) -> None:
    settings = FunctionSettings.from_env()
    assert (settings.workspace_root, settings.local_repository_roots, settings.artifact_link_endpoint) == (
        Path("/tmp/agentledger"), (), None)
    environ["AGENTLEDGER_LOCAL_REPOSITORY_ROOTS"] = os.pathsep.join(["/home/me", "", "/tmp"])
    assert FunctionSettings.from_env().local_repository_roots == (Path("/home/me"), Path("/tmp"))


def test_operator_settings_have_no_default_in_the_functions() -> None:
    """Their defaults are the CDK app's: a model that had its own would be a second copy."""
    required = {name for name, is_required in WorkflowSettings.variables().items() if is_required}
    assert {"AGENTLEDGER_MAX_REPLANS", "AGENTLEDGER_BEDROCK_MAX_REASKS", "AGENTLEDGER_WORKSPACE_RETENTION_HOURS",
            "AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS", "AGENTLEDGER_WRITER", "AGENTLEDGER_BUILD_COMPUTES",
            "AGENTLEDGER_BUILD_IMAGES"} <= required
    assert ApiSettings.variables()["AGENTLEDGER_ALLOW_SELF_APPROVAL"]


def test_prices_and_retention_parse_as_the_stack_writes_them(environ: dict[str, str]) -> None:
    environ.update(AGENTLEDGER_REVIEW_EMPTY_PLANS="false", AGENTLEDGER_WORKSPACE_RETENTION_HOURS="1.5",
                   AGENTLEDGER_TEST_TIMEOUT_LIMIT_SECONDS="3600", AGENTLEDGER_AGENT="",
                   AGENTLEDGER_BUILD_COMPUTES="BUILD_GENERAL1_SMALL, BUILD_GENERAL1_LARGE",
                   AGENTLEDGER_BUILD_IMAGES="aws/codebuild/standard:7.0",
                   AGENTLEDGER_WRITER="bedrock", AGENTLEDGER_BEDROCK_MODEL_ID="m", AGENTLEDGER_BEDROCK_MAX_TOKENS="10",
                   AGENTLEDGER_BEDROCK_TEMPERATURE="0.0", AGENTLEDGER_BEDROCK_MAX_REASKS="2",
                   AGENTLEDGER_BEDROCK_PRICES="0.0008,0.004", AGENTLEDGER_GENERATION_MODULE_SECONDS="30",
                   AGENTLEDGER_GENERATION_RUN_SECONDS="300", AGENTLEDGER_GENERATION_ITERATIONS="500",
                   AGENTLEDGER_GENERATION_RUNS="2", AGENTLEDGER_MUTATION_MODULE_SECONDS="20",
                   AGENTLEDGER_MUTATION_RUN_SECONDS="100")
    settings = WorkflowSettings.from_env()
    limits = settings.generation_limits
    assert (limits.module_seconds, limits.run_seconds, limits.iterations, limits.runs,
            limits.mutation_module_seconds, limits.mutation_run_seconds) == (30, 300, 500, 2, 20, 100)
    assert settings.bedrock_prices == (0.0008, 0.004)
    assert settings.workspace_retention_s == 5400
    assert settings.review_empty_plans is False
    assert settings.build_computes == ("BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_LARGE")
