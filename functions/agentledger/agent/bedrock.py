"""A model-backed writer: the Bedrock Converse API with one tool whose input schema is the plan, so
the model's answer is a structured plan (a pytest module per targeted module), validated like any
other planner's. Output that does not validate is sent back with the errors a bounded number of
times; then the run goes to a person. The code it writes is untrusted: it is parsed here, never
run; it runs only in the sandboxed build, whose filters keep what builds, passes and adds coverage.

Every call is kept (request, response, stop reason, token usage, latency) on the plan, so the plan
stage stores each as an artifact and names it in the plan's evidence."""
from __future__ import annotations

import ast
import copy
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agentledger.agent import java
from agentledger.agent.inventory import Inventory, module_import_path
from agentledger.agent.planner import (
    ModelCall,
    Plan,
    PlanBrief,
    PlanItem,
    SkippedTarget,
    TestPaths,
    generation_settings,
    repository_config,
)
from agentledger.fingerprints import sha256_bytes
from agentledger.generation import GenerationLimits
from agentledger.source import SourceSnapshot, is_safe_relative_path

PLAN_TOOL = "submit_plan"
MAX_SOURCE_CHARS = 60_000  # of module source put into one prompt
MAX_CODE_CHARS = 60_000  # of one test module the model writes
SYSTEM_PROMPTS = {
    "python": (
        "You write pytest unit tests for a Python repository: one test module per source module, for "
        "the objects no existing test imports or calls. Import each module by its import name. Use plain "
        "test functions, fixtures, pytest.mark.parametrize and pytest.raises as a careful engineer would. "
        "Tests must be deterministic and must not touch the network, the clock or files outside tmp_path. "
        "Only assert behaviour you can read in the source you are given; never invent modules or names. "
        f"Answer only by calling the {PLAN_TOOL} tool."
    ),
    "java": (
        "You write JUnit 5 tests for a Maven project, for the public methods no existing test calls. Each "
        "test class is in the package of the class it tests, named after what it tests and ending in Test, "
        "and holds the tests of one behaviour: a class is kept or dropped whole. Use @Test, "
        "@ParameterizedTest and assertThrows as a careful engineer would, and only org.junit.jupiter and the "
        "JDK. Tests must be deterministic and must not touch the network, the clock or files. Only assert "
        "behaviour you can read in the source you are given; never invent classes or methods. "
        f"Answer only by calling the {PLAN_TOOL} tool, with each class's source path and code."
    ),
}


class PlannerOutputError(Exception):
    """The model's plan did not validate after every re-ask: a person should look (the handoff
    carries the errors; the calls are stored as the plan stage's artifacts)."""

    def __init__(self, message: str, calls: list[ModelCall]) -> None:
        super().__init__(message)
        self.calls = calls


class _ProposedModule(BaseModel):
    path: str = Field(min_length=4, max_length=300)  # the source module: "pkg/mod.py"
    rationale: str = Field(min_length=1, max_length=1_000)
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS)  # a pytest module or a JUnit class testing it


class _ProposedSkip(BaseModel):
    target: str = Field(max_length=300)
    reason: str = Field(max_length=500)


class _ProposedPlan(BaseModel):
    """What the tool's input must be; its JSON schema is the tool's input schema."""

    modules: list[_ProposedModule] = Field(max_length=50)
    skipped: list[_ProposedSkip] = Field(default_factory=list, max_length=200)
    files_read: list[str] = Field(default_factory=list, max_length=200)


@dataclass(frozen=True)
class BedrockSettings:
    """As the stack configures the planner (the bedrock* context keys; their defaults are the CDK app's)."""

    model_id: str
    max_tokens: int
    temperature: float
    max_reasks: int
    # USD per 1,000 tokens, for the cost estimate only.
    prices: dict[str, float]


class BedrockPlanner:
    name = "bedrock"

    def __init__(self, client: Any, settings: BedrockSettings, limits: GenerationLimits | None = None) -> None:
        self._client = client  # a boto3 bedrock-runtime client
        self._settings = settings
        self._limits = limits or GenerationLimits()

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        config = repository_config(snapshot)
        language = "java" if config is not None and config.ecosystem == "maven" else "python"
        prompt = _prompt(inventory, snapshot, brief, language)
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": prompt}]}]
        calls: list[ModelCall] = []
        errors = ""
        for _ in range(self._settings.max_reasks + 1):
            call, content = self._converse(messages, language)
            calls.append(call)
            tool_use = next((block["toolUse"] for block in content if "toolUse" in block), None)
            if tool_use is None:
                errors = f"the answer did not call {PLAN_TOOL} (stop reason {call.stop_reason})"
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content": [{"text": f"{errors}. Call {PLAN_TOOL} with the plan."}]}]
                continue
            try:
                return self._plan_from(tool_use["input"], snapshot, brief, calls, language)
            except (ValidationError, ValueError) as invalid:
                errors = str(invalid)
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content": [{"toolResult": {
                                 "toolUseId": tool_use["toolUseId"], "status": "error",
                                 "content": [{"text": f"The plan does not validate: {errors}. Call {PLAN_TOOL} "
                                                      "again with a corrected plan."}]}}]}]
        why = f"the model's plan did not validate after {len(calls)} call(s): {errors}"
        raise PlannerOutputError(why[:2_000], calls)

    def _converse(self, messages: list[dict[str, Any]], language: str) -> tuple[ModelCall, list[dict[str, Any]]]:
        request = {
            "modelId": self._settings.model_id,
            "system": [{"text": SYSTEM_PROMPTS[language]}],
            "messages": messages,
            "inferenceConfig": {"maxTokens": self._settings.max_tokens, "temperature": self._settings.temperature},
            "toolConfig": {"tools": [{"toolSpec": {"name": PLAN_TOOL, "description": "Submit the test plan.",
                                                   "inputSchema": {"json": _ProposedPlan.model_json_schema()}}}],
                           "toolChoice": {"tool": {"name": PLAN_TOOL}}},
        }
        started = time.monotonic()
        response = self._client.converse(**request)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        usage = response.get("usage", {})
        prices = self._settings.prices
        cost = (usage.get("inputTokens", 0) * prices.get("input", 0.0)
                + usage.get("outputTokens", 0) * prices.get("output", 0.0)) / 1000
        # A snapshot: the conversation goes on in `messages` after this call is recorded.
        call = ModelCall(model_id=self._settings.model_id, request=copy.deepcopy(request),
                         response={key: value for key, value in response.items() if key != "ResponseMetadata"},
                         stop_reason=response.get("stopReason", ""), input_tokens=usage.get("inputTokens", 0),
                         output_tokens=usage.get("outputTokens", 0),
                         latency_ms=response.get("metrics", {}).get("latencyMs", elapsed_ms), estimated_cost_usd=cost)
        return call, response["output"]["message"]["content"]

    def _plan_from(self, proposed_input: Any, snapshot: SourceSnapshot, brief: PlanBrief,
                   calls: list[ModelCall], language: str) -> Plan:
        proposed = _ProposedPlan.model_validate(proposed_input)
        unknown = sorted(path for path in proposed.files_read
                         if not is_safe_relative_path(path) or path not in snapshot.files)
        if unknown:
            raise ValueError(f"files_read names files the repository does not have: {', '.join(unknown)}")
        paths = TestPaths(snapshot)
        if language == "java":
            items = _junit_items(proposed.modules, snapshot)
        else:
            items = [PlanItem(target=f"{module.path}::", test_path=paths.of(module.path), rationale=module.rationale,
                              code=_test_module(module)) for module in proposed.modules]
        missing = sorted({item.module_path for item in items} - set(snapshot.files))
        if missing:
            raise ValueError(f"modules the repository does not have: {', '.join(missing)}")
        read = sorted({*proposed.files_read, *(item.module_path for item in items)})
        config = repository_config(snapshot)
        return Plan(planner=f"{self.name}:{self._settings.model_id}", writer="bedrock", revision=snapshot.revision,
                    generation=generation_settings(config, brief, self._limits) if items and config else None,
                    items=sorted(items, key=lambda item: item.target),
                    skipped=sorted((SkippedTarget(target=s.target, reason=s.reason) for s in proposed.skipped),
                                   key=lambda skip: skip.target),
                    files_read={**{path: sha256_bytes((snapshot.root / path).read_bytes()) for path in read},
                                **(paths.read if items and language == "python" else {})},
                    model_calls=calls)


def _test_module(module: _ProposedModule) -> str:
    """The model's test module, checked to be one: it parses and defines a test. Parsed, never run."""
    if module_import_path(module.path) is None:
        raise ValueError(f"{module.path} is not a module Python can import by name")
    try:
        tree = ast.parse(module.code)
    except SyntaxError as error:
        raise ValueError(f"the test module for {module.path} does not parse: "
                         f"line {error.lineno}: {error.msg}") from None
    if not any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and node.name.lower().startswith("test") for node in tree.body):
        raise ValueError(f"the test module for {module.path} defines no test function or Test class")
    return module.code if module.code.endswith("\n") else module.code + "\n"


def _junit_items(modules: list[_ProposedModule], snapshot: SourceSnapshot) -> list[PlanItem]:
    """The model's JUnit classes, each where Maven's layout puts it; none may replace a file the
    repository has, nor another of them. Checked by name and layout, never compiled here."""
    items: list[PlanItem] = []
    for module in modules:
        if not java.is_main_source(module.path):
            raise ValueError(f"{module.path} is not a Java class under {java.MAIN_SOURCES}")
        test_path = java.junit_test_path(module.path, module.code)
        if test_path in snapshot.files or any(item.test_path == test_path for item in items):
            raise ValueError(f"{test_path} exists already: name the test class for what it tests")
        code = module.code if module.code.endswith("\n") else module.code + "\n"
        items.append(PlanItem(target=f"{module.path}::", test_path=test_path, rationale=module.rationale, code=code))
    return items


def _prompt(inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief, language: str) -> str:
    in_language = [target for target in inventory.untested
                   if java.is_main_source(target.partition("::")[0]) == (language == "java")]
    untested = {target.partition("::")[0] for target in in_language}
    sections = [f"Request: {brief.request}", "",
                "Objects no existing test imports or calls (path::qualified.name):",
                *([f"- {target}" for target in in_language] or ["- none"])]
    if brief.reviewer_comment:
        sections += ["", f"A reviewer sent back plan {brief.rejected_plan_digest} with this comment; address it:",
                     brief.reviewer_comment]
    budget = MAX_SOURCE_CHARS
    for path in sorted(untested):
        text = (snapshot.root / path).read_text(encoding="utf-8", errors="replace")
        if len(text) > budget:
            sections += ["", f"(source of {path} and later modules left out: prompt size limit)"]
            break
        budget -= len(text)
        sections += ["", f"Source of {path}:", f"```{language}", text, "```"]
    sections += ["", f"Give each test module with the path of the source module it tests. Call {PLAN_TOOL}."]
    return "\n".join(sections)
