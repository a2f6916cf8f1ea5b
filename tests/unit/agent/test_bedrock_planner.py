"""The Bedrock writer offline: botocore's Stubber checks every Converse request and response
against the real API's shapes, and answers with what a model would: pytest code, which is parsed
and checked here, never run (it runs only in the sandboxed build)."""
from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from agentledger.agent import (
    BedrockPlanner,
    BedrockSettings,
    PlanBrief,
    PlannerOutputError,
    inspect_repository,
    snapshot_directory,
)
from agentledger.agent.bedrock import PLAN_TOOL

from .samples import BRIEF, make_sample_repo

pytestmark = pytest.mark.unit
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
TEST_CODE = """import pytest

from pkg.calc import multiply


@pytest.mark.parametrize(("a", "b", "product"), [(3, 4, 12), (0, 5, 0), (-2, 3, -6)])
def test_multiply(a, b, product):
    assert multiply(a, b) == product
"""
GOOD = {"modules": [{"path": "pkg/calc.py", "rationale": "no test calls multiply", "code": TEST_CODE}],
        "skipped": [{"target": "pkg/calc.py::Accumulator", "reason": "nothing to state"}],
        "files_read": ["pkg/calc.py"]}


def _answer(tool_input: Any | None, text: str = "", tokens: tuple[int, int] = (1200, 80)) -> dict[str, Any]:
    content = [{"toolUse": {"toolUseId": "tool-1", "name": PLAN_TOOL, "input": tool_input}}] if tool_input is not None \
        else [{"text": text}]
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if tool_input is not None else "end_turn",
            "usage": {"inputTokens": tokens[0], "outputTokens": tokens[1], "totalTokens": sum(tokens)},
            "metrics": {"latencyMs": 640}}


EXPECTED_REQUEST = {"modelId": MODEL, "system": ANY, "messages": ANY,
                    "inferenceConfig": {"maxTokens": 2048, "temperature": 0.0},
                    "toolConfig": {"tools": [{"toolSpec": {"name": PLAN_TOOL, "description": ANY, "inputSchema": ANY}}],
                                   "toolChoice": {"tool": {"name": PLAN_TOOL}}}}


@pytest.fixture
def client():
    return boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="offline",
                        aws_secret_access_key="offline")


def _planner(client, max_reasks: int = 2) -> BedrockPlanner:
    settings = BedrockSettings(model_id=MODEL, max_tokens=2048, temperature=0.0, max_reasks=max_reasks,
                               prices={"input": 0.001, "output": 0.005})
    return BedrockPlanner(client, settings)


def _plan(client, repo, *answers, brief: PlanBrief = BRIEF, max_reasks: int = 2):
    snapshot = snapshot_directory(repo)
    with Stubber(client) as stub:
        for answer in answers:
            stub.add_response("converse", answer, EXPECTED_REQUEST)
        plan = _planner(client, max_reasks).plan(inspect_repository(snapshot), snapshot, brief)
        stub.assert_no_pending_responses()
    return plan, snapshot


def test_a_valid_tool_answer_is_the_plan_with_its_call_recorded(client, tmp_path):
    plan, snapshot = _plan(client, make_sample_repo(tmp_path / "repo"), _answer(GOOD))
    assert plan.planner == f"bedrock:{MODEL}"
    assert plan.writer == "bedrock"
    assert [(item.target, item.test_path, item.code) for item in plan.items] == [
        ("pkg/calc.py::", "tests/test_calc_generated.py", TEST_CODE)]
    assert plan.files_read == {"pkg/calc.py": snapshot.files["pkg/calc.py"]}  # hashed here, not by the model
    (call,) = plan.model_calls
    assert (call.model_id, call.stop_reason, call.input_tokens, call.output_tokens, call.latency_ms) == (
        MODEL, "tool_use", 1200, 80, 640)
    assert call.estimated_cost_usd == pytest.approx(1.2 * 0.001 + 0.08 * 0.005)
    prompt = call.request["messages"][0]["content"][0]["text"]
    assert "Request: write tests for calc" in prompt
    assert "- pkg/calc.py::multiply" in prompt and "Source of pkg/calc.py:" in prompt
    assert "pytest" in call.request["system"][0]["text"]
    assert "model_calls" not in plan.approved_content()  # what a reviewer approves is the plan, not the transcript


def test_the_reviewers_comment_is_in_the_prompt_of_a_replan(client, tmp_path):
    brief = PlanBrief(request="write tests", reviewer_comment="cover multiply by zero",
                      rejected_plan_digest="sha256:old")
    plan, _ = _plan(client, make_sample_repo(tmp_path / "repo"), _answer(GOOD), brief=brief)
    prompt = plan.model_calls[0].request["messages"][0]["content"][0]["text"]
    assert "sent back plan sha256:old" in prompt and "cover multiply by zero" in prompt


@pytest.mark.parametrize(("bad", "complaint"), [
    ({**GOOD, "modules": [{**GOOD["modules"][0], "path": "pkg/nowhere.py"}]}, "modules the repository does not have"),
    ({**GOOD, "files_read": ["/etc/passwd"]}, "files the repository does not have"),
    ({**GOOD, "modules": [{**GOOD["modules"][0], "code": "def test_x(:\n"}]}, "does not parse"),
    ({**GOOD, "modules": [{**GOOD["modules"][0], "code": "import os\nos.system('rm -rf /')\n"}]},
     "defines no test"),
    ({"modules": "all of them"}, "valid list"),
])
def test_output_that_does_not_validate_is_sent_back_with_its_errors_and_the_corrected_plan_used(
        client, tmp_path, bad, complaint):
    plan, _ = _plan(client, make_sample_repo(tmp_path / "repo"), _answer(bad), _answer(GOOD))
    assert [item.target for item in plan.items] == ["pkg/calc.py::"]
    first, second = plan.model_calls
    sent_back = second.request["messages"][-1]["content"][0]["toolResult"]
    assert sent_back["status"] == "error" and sent_back["toolUseId"] == "tool-1"
    assert complaint in sent_back["content"][0]["text"]
    assert first.request["messages"] == second.request["messages"][:1]


def test_an_answer_without_the_tool_is_asked_again(client, tmp_path):
    plan, _ = _plan(client, make_sample_repo(tmp_path / "repo"), _answer(None, text="Here is my plan: ..."),
                    _answer(GOOD))
    assert len(plan.model_calls) == 2
    assert f"Call {PLAN_TOOL} with the plan" in plan.model_calls[1].request["messages"][-1]["content"][0]["text"]


def test_output_that_never_validates_goes_to_a_person_with_every_call(client, tmp_path):
    bad = _answer({**GOOD, "modules": [{**GOOD["modules"][0], "path": "pkg/nowhere.py"}]})
    snapshot = snapshot_directory(make_sample_repo(tmp_path / "repo"))
    with Stubber(client) as stub:
        for _ in range(2):
            stub.add_response("converse", bad, EXPECTED_REQUEST)
        with pytest.raises(PlannerOutputError, match="did not validate after 2 call") as raised:
            _planner(client, max_reasks=1).plan(inspect_repository(snapshot), snapshot, BRIEF)
        stub.assert_no_pending_responses()
    assert len(raised.value.calls) == 2
