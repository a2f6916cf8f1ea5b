"""The reference pages, written from the code each time the site is built, so they cannot drift
from it: the settings (cdk.json, the CDK app, the functions' settings models and the repository
keys), the CLI (its argparse parser), the API (its OpenAPI document) and the metrics (their one
list). Each page is a function that returns Markdown; docs/gen/pages.py writes them into the site.

What a setting does is said in words in docs/gen/settings.toml. Its names and defaults come from
the code, and a setting the code has but the words lack (or the other way round) stops the build.
tests/unit/test_docs_reference.py holds the pages to naming every setting, command, route and
metric."""
from __future__ import annotations

import argparse
import ast
import importlib
import io
import json
import os
import pkgutil
import re
import tokenize
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from agentledger import config as function_config
from agentledger import handlers, metric_names
from agentledger.cli.exit_codes import MEANING, ExitCode
from agentledger.cli.main import build_parser
from agentledger.deploy import CDK_JSON_FILE, PROJECT_ROOT
from agentledger.handlers.api import app as api_resolver
from agentledger.handlers.wiring import HANDLER_SETTINGS
from agentledger.testrun import config as repository_config
from agentledger.testrun import files as repository_files

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

SETTINGS_WORDS = Path(__file__).with_name("settings.toml")
# Read as source, not imported: importing the CDK app starts the CDK's Node.js runtime.
CDK_APP = PROJECT_ROOT / "infra" / "agentledger" / "deploy" / "app.py"
METRIC_LIST = Path(metric_names.__file__)
DASHBOARD = PROJECT_ROOT / "infra" / "agentledger" / "deploy" / "constructs" / "observability.py"
FUNCTIONS_DIR = PROJECT_ROOT / "functions"
VARIABLE_PREFIX = "AGENTLEDGER_"
# What a variable the stack sets from one of its own resources ends with.
RESOURCE_SUFFIXES = ("_NAME", "_ARN", "_PATH")
# argparse wraps its usage lines at the terminal's width: one width, whatever builds the site.
USAGE_COLUMNS = "100"

Settings = type[function_config.FunctionSettings]
Variable = tuple[str, Settings, bool]  # its settings field, the model that declares it, whether required


class ReferenceMismatch(Exception):
    """The code and docs/gen/settings.toml disagree: the build stops and says where."""


# --- Markdown ----------------------------------------------------------------------------------

def _code(value: object) -> str:
    """A code span (a table's cells may hold pipes inside one)."""
    text = str(value)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _cell(text: str) -> str:
    """Prose on one line, for a table cell: a pipe outside a code span would end the cell."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(part if part.startswith("`") else part.replace("|", "\\|") for part in parts)


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows] + [""]


def _page(title: str, intro: str, *sections: list[str]) -> str:
    lines = [f"# {title}", "", intro, ""]
    for section in sections:
        lines += section
    return "\n".join(lines).rstrip() + "\n"


def _written_from(*sources: str) -> str:
    return "Written from " + ", ".join(_code(source) for source in sources) + " each time the site is built."


# --- settings ----------------------------------------------------------------------------------

def context_defaults() -> dict[str, Any]:
    """Every context key the stack reads, with its default from cdk.json, in cdk.json's order.
    The app is read as source: each key is the second argument of a `_context(app, KEY, ...)` call."""
    defaults = {key: value for key, value in json.loads(CDK_JSON_FILE.read_text())["context"].items()
                if not key.startswith("@")}  # "@aws-cdk/..." keys are the CDK's feature flags
    read = {str(node.args[1].value) for node in ast.walk(ast.parse(CDK_APP.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_context"
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)}
    if set(defaults) != read:
        raise ReferenceMismatch(f"cdk.json's context and {CDK_APP.relative_to(PROJECT_ROOT)} disagree: read without a "
                                "default in cdk.json: "
                                f"{sorted(read - set(defaults))}; in cdk.json but never read: "
                                f"{sorted(set(defaults) - read)}")
    return defaults


def settings_models() -> list[Settings]:
    """Every settings model in agentledger.config, in the order they are defined (bases first)."""
    return [model for model in vars(function_config).values()
            if isinstance(model, type) and issubclass(model, function_config.FunctionSettings)]


def function_variables() -> dict[str, Variable]:
    """Each environment variable a function reads. A base is defined before the models that extend
    it, so the first model found reading a variable is the one that declares it."""
    found: dict[str, Variable] = {}
    for model in settings_models():
        for name, field in model.model_fields.items():
            found.setdefault(str(field.validation_alias), (name, model, field.is_required()))
    return found


def handler_settings() -> dict[str, Settings]:
    """"module.function" of every handler -> the settings model it reads, as its decorator records it."""
    for module in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"{handlers.__name__}.{module.name}")
    return dict(sorted(HANDLER_SETTINGS.items()))


def snake_case(key: str) -> str:
    """A context key's words joined by underscores (generationRunSeconds: generation_run_seconds)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def variable_of(key: str, variables: Iterable[str]) -> str | None:
    """The variable a context key reaches the functions as, by the one rule every setting follows:
    AGENTLEDGER_ and the key's words in capitals (generationRunSeconds: AGENTLEDGER_GENERATION_RUN_SECONDS)."""
    named = VARIABLE_PREFIX + snake_case(key).upper()
    return named if named in variables else None


def _words() -> dict[str, Any]:
    return tomllib.loads(SETTINGS_WORDS.read_text())


def _default(value: Any) -> str:
    if value == "":
        return "empty"
    return _code(json.dumps(value) if isinstance(value, bool) else value)


def _described(table: str, words: dict[str, Any], in_code: Iterable[str]) -> dict[str, Any]:
    """The words of one table of settings.toml, which must describe exactly what the code has."""
    described: dict[str, Any] = words[table]
    missing, extra = set(in_code) - set(described), set(described) - set(in_code)
    if missing or extra:
        raise ReferenceMismatch(f"docs/gen/settings.toml [{table}] and the code disagree: not described: "
                                f"{sorted(missing)}; described but not in the code: {sorted(extra)}")
    return described


CONTEXT_WORDS = frozenset({"sets", "instead", "bounds"})


def same_setting_in_repositories(key: str) -> str | None:
    """The repository key that is this context key's setting, chosen by a repository within the
    deployment's: the key in snake_case, by the rule every setting follows."""
    named = snake_case(key)
    return named if named in repository_config._VALIDATORS else None


def _context_row(key: str, default: Any, words: dict[str, Any], variable: str | None) -> list[str]:
    instead, bounds = words.get("instead"), words.get("bounds")
    if set(words) - CONTEXT_WORDS:
        raise ReferenceMismatch(f"context key {key}: settings.toml says {sorted(set(words) - CONTEXT_WORDS)}, "
                                f"which names nothing; it may say {sorted(CONTEXT_WORDS)}")
    if variable is None and instead is None:
        raise ReferenceMismatch(f"context key {key}: no function reads a variable named after it; "
                                "say in settings.toml what the stack sets instead (`instead`)")
    if variable is not None and instead is not None:
        raise ReferenceMismatch(f"context key {key}: the functions read {variable}, yet settings.toml says `instead`")
    if bounds is not None and bounds not in repository_config._VALIDATORS:
        raise ReferenceMismatch(f"context key {key}: a repository has no key {bounds!r}")
    same = same_setting_in_repositories(key)
    repository = _code(same) if same else f"bounds {_code(bounds)}" if bounds else ""
    return [_code(key), _code(variable) if variable else f"none ({instead})", repository, _default(default),
            _cell(words["sets"])]


def _context_section(words: dict[str, Any], variables: dict[str, Variable]) -> list[str]:
    defaults = context_defaults()
    described = _described("context", words, defaults)
    rows = [_context_row(key, default, described[key], variable_of(key, variables))
            for key, default in defaults.items()]
    return [
        "## Deployment settings", "",
        "CDK context keys, set the same way for a deployment and for the local stack: "
        "`cdk deploy -c KEY=VALUE` or `agentledger serve -c KEY=VALUE`. Both synthesize the same app, whose "
        "defaults are in `cdk.json`, and `serve` refuses a key the stack does not read. The stack hands each value "
        "to the functions that read it. One rule names a setting everywhere: its environment variable is "
        "`AGENTLEDGER_` and the key's words in capitals, and where a repository may choose the setting for itself, "
        "within what the deployment allows, its repository key is the key's words in snake_case "
        "(`generationRunSeconds`, `AGENTLEDGER_GENERATION_RUN_SECONDS`, `generation_run_seconds`). A key that "
        "*bounds* a repository key caps it or lists its choices: two settings, each with its own name.", "",
        *_table(["context key", "environment variable", "repository key", "default", "what it sets"], rows),
    ]


def _repository_section(words: dict[str, Any]) -> list[str]:
    described = _described("repository", words, repository_config._VALIDATORS)
    within = {**{entry["bounds"]: key for key, entry in words["context"].items() if "bounds" in entry},
              **{same: key for key in words["context"] if (same := same_setting_in_repositories(key))}}
    constants = vars(repository_config)  # the words may name one: {DEFAULT_TIMEOUT_S}
    rows = [[_code(key), _cell(described[key]["meaning"].format_map(constants)),
             _cell(described[key]["default"].format_map(constants)), _code(within[key]) if key in within else ""]
            for key in repository_config._VALIDATORS]
    return [
        "## Repository settings", "",
        f"A repository configures its test builds in `{repository_config.EXPLICIT_FILE}` at its root, or in "
        f"`[tool.agentledger]` of its `{repository_config.PYPROJECT_FILE}`; if `{repository_config.EXPLICIT_FILE}` "
        "exists, the pyproject table is ignored. Each key overrides the detected default. A bad value stops the "
        "stage with a handoff that names the file and the key. Links, files over "
        f"{repository_files.MAX_CONFIG_FILE_BYTES >> 20} MiB and unknown keys are refused.", "",
        *_table(["key", "meaning", "default", "within the deployment's"], rows),
    ]


def _assigned(path: Path, name: str) -> str:
    """The expression a module-level NAME is assigned, as written: its value, without importing."""
    source = path.read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == name:
                return ast.get_source_segment(source, node.value) or ""
    raise ReferenceMismatch(f"docs/gen/settings.toml [[constants]]: {path.relative_to(PROJECT_ROOT)} assigns no {name}")


def _constants_section(words: dict[str, Any]) -> list[str]:
    rows = [[_code(constant["name"]), _code(_assigned(PROJECT_ROOT / constant["file"], constant["name"])),
             _code(constant["file"]), _cell(constant["bounds"])]
            for constant in words["constants"]]
    return [
        "## Bounds that are constants in code", "",
        "These are not settings: changing one is a change to the code.", "",
        *_table(["constant", "value", "file", "what it bounds"], rows),
    ]


def _resource_section(variables: dict[str, Variable], from_context: set[str]) -> list[str]:
    rows = []
    for variable, (field, model, required) in variables.items():
        if not required or variable in from_context:
            continue
        if not variable.endswith(RESOURCE_SUFFIXES):
            raise ReferenceMismatch(f"{variable}: the stack sets it, yet it is named after no context key and "
                                    f"ends in none of {', '.join(RESOURCE_SUFFIXES)}, as a resource's would")
        rows.append([_code(variable), _code(field), _code(model.__name__)])
    return [
        "## Variables the stack sets from its resources", "",
        "The names and ARNs of what the stack creates, each passed to the functions that use it.", "",
        *_table(["environment variable", "settings field", "declared in"], rows),
    ]


def _local_section(words: dict[str, Any], variables: dict[str, Variable]) -> list[str]:
    local = {variable: entry for variable, entry in variables.items() if not entry[2]}
    described = _described("local", words, local)
    rows = []
    for variable, (field, model, _) in local.items():
        default = model.model_fields[field].default
        rows.append([_code(variable), _code(default) if default not in (None, ()) else "unset",
                     _cell(described[variable]), _code(model.__name__)])
    return [
        "## Variables only the local runtime sets", "",
        "The stack never sets these, so on Lambda their default holds. `agentledger serve` sets them where the "
        "local runtime must differ from Lambda.", "",
        *_table(["environment variable", "on Lambda", "what it is", "declared in"], rows),
    ]


def _models_section(variables: dict[str, Variable]) -> list[str]:
    readers: dict[Settings, list[str]] = {}
    for handler, model in handler_settings().items():
        readers.setdefault(model, []).append(handler)
    rows = [[_code(model.__name__), ", ".join(_code(handler) for handler in readers.get(model, [])),
             ", ".join(_code(base.__name__) for base in model.__bases__
                       if issubclass(base, function_config.FunctionSettings)),
             ", ".join(_code(variable) for variable, (_, declared_by, _) in variables.items() if declared_by is model)]
            for model in settings_models()]
    return [
        "## Which function reads what", "",
        "Each handler reads its environment once, into the settings model its decorator names "
        "(`functions/agentledger/config.py`): the variables the model declares and those of the models it "
        "extends. A variable the stack did not pass fails the invocation before any work, naming it. "
        "`tests/infra/test_function_settings.py` checks every function of the synthesized stack against its "
        "model.", "",
        *_table(["settings model", "read by", "extends", "declares"], rows),
    ]


def settings_page() -> str:
    words, variables = _words(), function_variables()
    from_context = {variable for key in context_defaults() if (variable := variable_of(key, variables))}
    return _page(
        "Settings",
        _written_from("cdk.json", "infra/agentledger/deploy/app.py", "functions/agentledger/config.py",
                      "functions/agentledger/testrun/config.py") + " The words come from `docs/gen/settings.toml`.",
        _context_section(words, variables), _repository_section(words), _constants_section(words),
        _resource_section(variables, from_context), _local_section(words, variables), _models_section(variables))


# --- the CLI -----------------------------------------------------------------------------------

def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _documented(actions: Iterable[argparse.Action]) -> list[argparse.Action]:
    return [action for action in actions if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return _code(action.metavar or action.dest)
    if action.nargs == 0:
        value = ""
    elif action.choices and not action.metavar:
        value = " {" + ",".join(map(str, action.choices)) + "}"
    else:
        value = f" {action.metavar or action.dest.upper()}"
    return _code(", ".join(action.option_strings) + value)


def _help(action: argparse.Action) -> str:
    """The help as `--help` prints it: argparse's %-placeholders filled from the action."""
    return _cell(action.help % {**vars(action), "prog": "agentledger"}) if action.help else ""


def _arguments(actions: list[argparse.Action]) -> list[str]:
    return _table(["argument", "what it does"], [[_argument(action), _help(action)] for action in actions])


def cli_page() -> str:
    with mock.patch.dict(os.environ, {"COLUMNS": USAGE_COLUMNS}):
        parser = build_parser()
        everywhere = [action for action in _documented(parser._actions) if action.option_strings]
        sections = [["## Options of every command", "", "Given before the command or after it.", "",
                     *_arguments(everywhere)]]
        for name, command in _subcommands(parser):
            own = [action for action in _documented(command._actions)
                   if action.dest not in {shared.dest for shared in everywhere}]
            sections.append([f"## `agentledger {name}`", "", command.description or "", "",
                             "```text", command.format_usage().strip(), "```", "",
                             *(_arguments(own) if own else [])])
    missing = set(ExitCode) - set(MEANING)
    if missing:
        raise ReferenceMismatch(f"exit codes without a meaning in agentledger/cli/exit_codes.py: {sorted(missing)}")
    sections.append(["## Exit codes", "", *_table(["code", "meaning"],
                                                   ([_code(int(code)), MEANING[code]] for code in ExitCode))])
    return _page("CLI", _written_from("infra/agentledger/cli/main.py", "infra/agentledger/cli/exit_codes.py")
                 + " The words are those of `agentledger COMMAND --help`.", *sections)


# --- the API -----------------------------------------------------------------------------------

SCHEMA_PREFIX = "#/components/schemas/"
CONSTRAINTS = {"minLength": "at least {} characters", "maxLength": "at most {} characters", "minimum": "at least {}",
               "maximum": "at most {}", "exclusiveMinimum": "more than {}", "exclusiveMaximum": "less than {}",
               "minItems": "at least {} items", "maxItems": "at most {} items", "pattern": "matching {}"}


def openapi_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(api_resolver.get_openapi_json_schema())
    return document


def _anchor(schema_name: str) -> str:
    return f"schema-{schema_name.lower()}"


def _type(schema: dict[str, Any]) -> str:
    """A JSON schema in a few words, linked to the named schemas it refers to."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(SCHEMA_PREFIX)
        return f"[{name}](#{_anchor(name)})"
    for combination, joiner in (("anyOf", " or "), ("oneOf", " or "), ("allOf", " and ")):
        if combination in schema:
            return joiner.join(_type(part) for part in schema[combination])
    if "const" in schema:
        return _code(json.dumps(schema["const"]))
    if "enum" in schema:
        return "one of " + ", ".join(_code(json.dumps(value)) for value in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        kind = f"array of {_type(schema.get('items', {}))}"
    elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        kind = f"object of {_type(schema['additionalProperties'])}"
    if "format" in schema:
        kind += f" ({schema['format']})"
    limits = [words.format(_code(schema[key]) if key == "pattern" else f"{schema[key]:g}" if
                           isinstance(schema[key], float) else schema[key])
              for key, words in CONSTRAINTS.items() if key in schema]
    return ", ".join([kind, *limits])


def _operation(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    lines = [f"## `{method.upper()} {path}`", "", f"{operation.get('summary', '')} (`{operation['operationId']}`).", ""]
    if operation.get("parameters"):
        lines += ["Parameters:", "", *_table(["name", "in", "required", "type"], [
            [_code(parameter["name"]), parameter["in"], "yes" if parameter.get("required") else "no",
             _type(parameter["schema"])] for parameter in operation["parameters"]])]
    if "requestBody" in operation:
        lines += [f"Body: {_type(operation['requestBody']['content']['application/json']['schema'])}.", ""]
    rows = []
    for status, response in sorted(operation["responses"].items()):
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        also = [f"header {_code(header)}: {_cell(spec['description'])}" for header, spec in
                response.get("headers", {}).items()]
        also += [f"link to {_code(link['operationId'])}" for link in response.get("links", {}).values()]
        rows.append([_code(status), _cell(response["description"]), _type(schema) if schema else "", "; ".join(also)])
    return lines + ["Responses:", "", *_table(["status", "when", "body", "also"], rows)]


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name} {{#{_anchor(name)}}}", ""]
    if schema.get("description"):
        lines += [" ".join(schema["description"].split()), ""]
    if "properties" not in schema:
        described = _type(schema)
        return lines + [f"{described[:1].upper()}{described[1:]}.", ""]
    required = set(schema.get("required", []))
    return lines + _table(["field", "type", "required", "meaning"], [
        [_code(field), _type(spec), "yes" if field in required else "no", _cell(spec.get("description", ""))]
        for field, spec in schema["properties"].items()])


def api_page() -> str:
    document = openapi_document()
    operations = [_operation(path, method, operation)
                  for path, methods in document["paths"].items() for method, operation in methods.items()]
    schemas = [_schema(name, schema) for name, schema in sorted(document["components"]["schemas"].items())]
    intro = (_written_from("functions/agentledger/handlers/api.py") + " It is the OpenAPI document the API serves at "
             "`GET /openapi.json` ([this build's copy](openapi.json)), in words. Every request is SigV4-signed, "
             "and every error's body is an [ErrorBody](#schema-errorbody).")
    return _page(f"API {document['info']['version']}", intro, *operations, ["## Schemas", ""], *schemas)


# --- metrics -----------------------------------------------------------------------------------

def _comments(source: str) -> tuple[dict[int, str], dict[int, str]]:
    """Line number -> its comment: those beside code, and those on lines of their own."""
    beside: dict[int, str] = {}
    alone: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines = alone if token.line.lstrip().startswith("#") else beside
            lines[token.start[0]] = token.string.lstrip("# ")
    return beside, alone


def _note(comments: tuple[dict[int, str], dict[int, str]], node: ast.stmt) -> str:
    """The comment beside a definition, or else the comment lines right above it."""
    beside, alone = comments
    own = [beside[line] for line in range(node.lineno, (node.end_lineno or node.lineno) + 1) if line in beside]
    above: list[str] = []
    while node.lineno - 1 - len(above) in alone:
        above.insert(0, alone[node.lineno - 1 - len(above)])
    return " ".join(own or above)


def metric_definitions() -> list[tuple[str, str, str]]:
    """(constant, metric name, note) for every metric of agentledger/metric_names.py, in its order:
    the plain names, and each name a dict of them holds (`CONSTANT['key']`)."""
    source = METRIC_LIST.read_text()
    comments = _comments(source)
    found = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        constant, value = node.targets[0].id, node.value
        if isinstance(value, ast.Dict):
            found += [(f"{constant}[{key.value!r}]", str(name.value), _note(comments, node))
                      for key, name in zip(value.keys, value.values, strict=True)
                      if isinstance(key, ast.Constant) and isinstance(name, ast.Constant)]
        elif isinstance(value, ast.Constant) and constant != "NAMESPACE" and not constant.endswith("_DIMENSION"):
            found.append((constant, str(value.value), _note(comments, node)))
    return found


def _metric_constants_used(path: Path) -> set[str]:
    """The metric_names constants a module names (`metric_names.NAME`)."""
    return {node.attr for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "metric_names"}


def metrics_page() -> str:
    emitters: dict[str, list[str]] = {}
    for path in sorted(FUNCTIONS_DIR.rglob("*.py")):
        for constant in _metric_constants_used(path):
            emitters.setdefault(constant, []).append(".".join(path.relative_to(FUNCTIONS_DIR).with_suffix("").parts))
    on_dashboard = _metric_constants_used(DASHBOARD)
    rows = []
    for constant, name, note in metric_definitions():
        listed_as = constant.partition("[")[0]
        rows.append([_code(name), ", ".join(_code(module) for module in emitters.get(listed_as, [])),
                     "yes" if listed_as in on_dashboard else "", _cell(note)])
    dimensions = [[_code(value), _code(name)]
                  for name, value in vars(metric_names).items() if name.endswith("_DIMENSION")]
    intro = (_written_from("functions/agentledger/metric_names.py") + " Every metric is in the namespace "
             f"{_code(metric_names.NAMESPACE)}, written by Powertools Metrics as CloudWatch embedded metric format "
             "records; `agentledger metrics` reads them back. The dashboard and the alarms name them from the same "
             "list, so a renamed metric cannot leave an alarm watching nothing.")
    return _page("Metrics", intro,
                 ["## Metrics", "", *_table(["metric", "emitted by", "on the dashboard or an alarm", "note"], rows)],
                 ["## Dimensions", "", *_table(["dimension", "constant"], dimensions)])


PAGES: dict[str, Callable[[], str]] = {
    "reference/settings.md": settings_page,
    "reference/cli.md": cli_page,
    "reference/api.md": api_page,
    "reference/metrics.md": metrics_page,
}
