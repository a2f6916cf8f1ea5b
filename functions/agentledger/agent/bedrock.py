"""A model-backed planner: the Bedrock Converse API with one tool whose input schema is the plan, so
the model's answer is a structured plan, validated like any other planner's. Output that does not
validate is sent back with the errors a bounded number of times; then the run goes to a person.

Every call is kept (request, response, stop reason, token usage, latency) on the plan, so the plan
stage stores each as an artifact and names it in the plan's evidence."""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agentledger.agent.inventory import Inventory
from agentledger.agent.planner import (
    Example,
    ModelCall,
    Plan,
    PlanBrief,
    PlanItem,
    SkippedTarget,
    generated_test_path,
    project_option_flags,
)
from agentledger.fingerprints import sha256_bytes
from agentledger.source import SourceSnapshot, is_safe_relative_path

PLAN_TOOL = "submit_plan"
MAX_SOURCE_CHARS = 60_000  # of module source put into one prompt
SYSTEM_PROMPT = (
    "You plan unit tests for a Python repository. Propose doctest-style examples that state the "
    "behaviour of objects no existing test imports or calls. Only use behaviour you can read in "
    "the source you are given; never invent modules or names. Answer only by calling the "
    f"{PLAN_TOOL} tool."
)


class PlannerOutputError(Exception):
    """The model's plan did not validate after every re-ask: a person should look (the handoff
    carries the errors; the calls are stored as the plan stage's artifacts)."""

    def __init__(self, message: str, calls: list[ModelCall]) -> None:
        super().__init__(message)
        self.calls = calls


class _ProposedExample(BaseModel):
    source: str = Field(min_length=1, max_length=2_000)
    expected: str = Field(default="", max_length=4_000)


class _ProposedItem(BaseModel):
    target: str = Field(min_length=3, max_length=300)  # "path::qualified.name"
    rationale: str = Field(min_length=1, max_length=1_000)
    examples: list[_ProposedExample] = Field(min_length=1, max_length=20)


class _ProposedSkip(BaseModel):
    target: str = Field(max_length=300)
    reason: str = Field(max_length=500)


class _ProposedPlan(BaseModel):
    """What the tool's input must be; its JSON schema is the tool's input schema."""

    items: list[_ProposedItem] = Field(max_length=50)
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

    def __init__(self, client: Any, settings: BedrockSettings) -> None:
        self._client = client  # a boto3 bedrock-runtime client
        self._settings = settings

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": _prompt(inventory, snapshot, brief)}]}]
        calls: list[ModelCall] = []
        errors = ""
        for _ in range(self._settings.max_reasks + 1):
            call, content = self._converse(messages)
            calls.append(call)
            tool_use = next((block["toolUse"] for block in content if "toolUse" in block), None)
            if tool_use is None:
                errors = f"the answer did not call {PLAN_TOOL} (stop reason {call.stop_reason})"
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content": [{"text": f"{errors}. Call {PLAN_TOOL} with the plan."}]}]
                continue
            try:
                return self._plan_from(tool_use["input"], snapshot, calls)
            except (ValidationError, ValueError) as invalid:
                errors = str(invalid)
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content": [{"toolResult": {
                                 "toolUseId": tool_use["toolUseId"], "status": "error",
                                 "content": [{"text": f"The plan does not validate: {errors}. Call {PLAN_TOOL} "
                                                      "again with a corrected plan."}]}}]}]
        why = f"the model's plan did not validate after {len(calls)} call(s): {errors}"
        raise PlannerOutputError(why[:2_000], calls)

    def _converse(self, messages: list[dict[str, Any]]) -> tuple[ModelCall, list[dict[str, Any]]]:
        request = {
            "modelId": self._settings.model_id,
            "system": [{"text": SYSTEM_PROMPT}],
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

    def _plan_from(self, proposed_input: Any, snapshot: SourceSnapshot, calls: list[ModelCall]) -> Plan:
        proposed = _ProposedPlan.model_validate(proposed_input)
        unknown = sorted(path for path in proposed.files_read
                         if not is_safe_relative_path(path) or path not in snapshot.files)
        if unknown:
            raise ValueError(f"files_read names files the repository does not have: {', '.join(unknown)}")
        items = [PlanItem(target=item.target, test_path=generated_test_path(item.target.partition("::")[0]),
                          rationale=item.rationale,
                          examples=[Example(source=e.source, expected=e.expected) for e in item.examples])
                 for item in proposed.items]
        missing = sorted({item.module_path for item in items} - set(snapshot.files))
        if missing:
            raise ValueError(f"targets name modules the repository does not have: {', '.join(missing)}")
        read = sorted({*proposed.files_read, *(item.module_path for item in items)})
        flags, config_read = project_option_flags(snapshot)
        return Plan(planner=f"{self.name}:{self._settings.model_id}", revision=snapshot.revision,
                    items=sorted(items, key=lambda item: item.target),
                    skipped=sorted((SkippedTarget(target=s.target, reason=s.reason) for s in proposed.skipped),
                                   key=lambda skip: skip.target),
                    files_read={**{path: sha256_bytes((snapshot.root / path).read_bytes()) for path in read},
                                **(config_read if items else {})},
                    option_flags=flags if items else [], model_calls=calls)


def _prompt(inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> str:
    untested = {target.partition("::")[0] for target in inventory.untested}
    sections = [f"Request: {brief.request}", "",
                "Objects no existing test imports or calls (path::qualified.name):",
                *([f"- {target}" for target in inventory.untested] or ["- none"])]
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
        sections += ["", f"Source of {path}:", "```python", text, "```"]
    sections += ["", f"Targets use the form path::qualified.name ('path::' for a module docstring). Call {PLAN_TOOL}."]
    return "\n".join(sections)
