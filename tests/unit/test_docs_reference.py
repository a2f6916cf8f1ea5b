"""The reference pages the documentation site writes from the code (docs/gen/reference.py): they
name every setting, command, route and metric, and a setting the code gains without words in
docs/gen/settings.toml stops the build instead of going unmentioned."""
from __future__ import annotations

import argparse
import json

import pytest

from agentledger import metric_names
from agentledger.cli.exit_codes import MEANING, ExitCode
from agentledger.cli.main import build_parser
from agentledger.config import FunctionSettings
from agentledger.deploy import CDK_JSON_FILE
from agentledger.testrun.config import _VALIDATORS
from docs.gen import reference

pytestmark = pytest.mark.unit


def _context_defaults() -> dict[str, object]:
    return {key: value for key, value in json.loads(CDK_JSON_FILE.read_text())["context"].items()
            if not key.startswith("@")}


def _settings_models(model: type[FunctionSettings] = FunctionSettings) -> set[type[FunctionSettings]]:
    return {model}.union(*(_settings_models(subclass) for subclass in model.__subclasses__()))


def _row(page: str, first_cell: str) -> str:
    return next(line for line in page.splitlines() if line.startswith(f"| `{first_cell}` |"))


def test_the_settings_page_names_every_context_key_variable_and_repository_key() -> None:
    page = reference.settings_page()
    variables = {variable for model in _settings_models() for variable in model.variables()}
    names = [*_context_defaults(), *variables, *_VALIDATORS]
    assert [name for name in names if f"`{name}`" not in page] == []


def test_one_row_names_a_setting_three_ways_with_its_default() -> None:
    row = _row(reference.settings_page(), "generationRunSeconds")
    assert "`AGENTLEDGER_GENERATION_RUN_SECONDS`" in row and "`generation_run_seconds`" in row
    assert f"`{_context_defaults()['generationRunSeconds']}`" in row


def test_words_that_name_a_setting_otherwise_than_the_rule_stop_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    words = reference._words()
    words["context"]["generationRunSeconds"]["repository_key"] = "generation_seconds"
    monkeypatch.setattr(reference, "_words", lambda: words)
    with pytest.raises(reference.ReferenceMismatch,
                       match="generationRunSeconds: settings.toml says \\['repository_key'\\]"):
        reference.settings_page()


def test_a_context_key_without_words_stops_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reference, "context_defaults", lambda: {**_context_defaults(), "newKnob": 1})
    with pytest.raises(reference.ReferenceMismatch, match="not described: \\['newKnob'\\]"):
        reference.settings_page()


def test_the_cli_page_names_every_command_and_argument() -> None:
    page = reference.cli_page()
    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction)).choices
    arguments = {option for command in [parser, *commands.values()] for action in command._actions
                 for option in action.option_strings if option not in ("-h", "--help")}
    assert [name for name in commands if f"## `agentledger {name}`" not in page] == []
    assert [option for option in arguments if option not in page] == []


def test_the_cli_page_says_what_every_exit_code_means() -> None:
    exit_codes = reference.cli_page().split("## Exit codes", 1)[1]
    assert [code for code in ExitCode if f"| `{int(code)}` | {MEANING[code]} |" not in exit_codes] == []


def test_the_api_page_names_every_operation_and_schema() -> None:
    page = reference.api_page()
    document = reference.openapi_document()
    operations = [f"## `{method.upper()} {path}`" for path, methods in document["paths"].items() for method in methods]
    schemas = [f"### {name} {{#schema-{name.lower()}}}" for name in document["components"]["schemas"]]
    assert [heading for heading in operations + schemas if heading not in page] == []


def test_the_metrics_page_names_every_metric() -> None:
    page = reference.metrics_page()
    constants = [value for name, value in vars(metric_names).items() if name.isupper()]
    listed = [value for value in constants if isinstance(value, str)]
    listed += [name for value in constants if isinstance(value, dict) for name in value.values()]
    assert [name for name in listed if f"`{name}`" not in page] == []
