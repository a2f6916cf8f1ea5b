"""The plan stage with the Bedrock planner, on the in-memory adapters and a stubbed Converse API:
every model call is an artifact named in the plan's evidence and counted in the metrics; a model
that never answers with a valid plan hands the run to a person with those calls kept."""
from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.stub import Stubber

from agentledger import metric_names
from agentledger.agent import BedrockPlanner, BedrockSettings, PlannerOutputError, ReferenceAgent
from agentledger.agent.bedrock import PLAN_TOOL
from agentledger.models import RunStatus, Stage, StageStatus
from agentledger.testing.world import World, build_world

if TYPE_CHECKING:
    from pathlib import Path

MODEL = "amazon.nova-micro-v1:0"
CODE = ("from textkit.slug import slugify\n\n\ndef test_slugify_joins_words():\n"
        "    assert slugify('Hello World') == 'hello-world'\n")
PLAN = {"modules": [{"path": "textkit/slug.py", "rationale": "no test calls it with unicode", "code": CODE}],
        "files_read": ["textkit/slug.py"]}


def _answer(tool_input: dict) -> dict:
    return {"output": {"message": {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "t-1", "name": PLAN_TOOL, "input": tool_input}}]}},
            "stopReason": "tool_use", "usage": {"inputTokens": 2000, "outputTokens": 100, "totalTokens": 2100},
            "metrics": {"latencyMs": 850}}


@pytest.fixture
def stubbed() -> tuple[Stubber, BedrockPlanner]:
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="offline",
                          aws_secret_access_key="offline")
    planner = BedrockPlanner(client, BedrockSettings(model_id=MODEL, max_tokens=4096, temperature=0.0, max_reasks=1,
                                                     prices={"input": 0.000035, "output": 0.00014}))
    return Stubber(client), planner


def _world(tmp_path: Path, planner: BedrockPlanner) -> tuple[World, str, str]:
    world = build_world(tmp_path, agent=ReferenceAgent(planner=planner))
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    return world, run_id, execution


def test_each_model_call_is_an_artifact_in_the_plans_evidence_and_in_the_metrics(tmp_path, stubbed) -> None:
    stub, planner = stubbed
    world, run_id, execution = _world(tmp_path, planner)
    with stub:
        stub.add_response("converse", _answer(PLAN))
        world.run(run_id, execution, Stage.PLAN)

    ledger = world.ledger.load(run_id)
    (call,) = [ref for ref in ledger.artifacts if ref.name == "model-call-1.json"]
    assert call.key in ledger.stages["plan"].outputs
    assert ledger.evidence["plan"].depends_on["model_call:model-call-1.json"] == call.sha256
    recorded = world.artifacts.get_json(call)
    assert (recorded["model_id"], recorded["stop_reason"], recorded["input_tokens"], recorded["latency_ms"]) == (
        MODEL, "tool_use", 2000, 850)
    assert recorded["request"]["toolConfig"]["toolChoice"] == {"tool": {"name": PLAN_TOOL}}
    plan = world.artifacts.get_json(next(r for r in ledger.artifacts if r.name == "plan.json"))
    assert "model_calls" not in plan and plan["planner"] == f"bedrock:{MODEL}"
    assert ledger.run.plan_digest == ledger.evidence["plan"].fingerprint
    counts = world.metrics.counts
    assert (counts[metric_names.MODEL_CALLS], counts[metric_names.MODEL_INPUT_TOKENS],
            counts[metric_names.MODEL_OUTPUT_TOKENS]) == (1, 2000, 100)
    assert counts[metric_names.MODEL_COST] == pytest.approx(2.0 * 0.000035 + 0.1 * 0.00014)
    assert (metric_names.MODEL_LATENCY, 0.85, None) in world.metrics.timings

    # The model's module is a candidate like any other: the execute stage's build decides what is kept.
    world.run(run_id, execution, Stage.EXECUTE)
    [generation] = world.builds.generations
    assert generation.test_run.startswith(f"{run_id}/")
    ledger = world.ledger.load(run_id)
    written = world.artifacts.get_json(next(r for r in ledger.artifacts if r.name == "test-files.json"))
    assert written == {"tests/test_slug_generated.py": CODE}


def test_a_model_that_never_answers_with_a_valid_plan_hands_the_run_to_a_person_with_its_calls(
        tmp_path, stubbed) -> None:
    stub, planner = stubbed
    world, run_id, execution = _world(tmp_path, planner)
    invalid = _answer({**PLAN, "modules": [{**PLAN["modules"][0], "path": "textkit/missing.py"}]})
    with stub:
        stub.add_response("converse", invalid)
        stub.add_response("converse", invalid)
        with pytest.raises(PlannerOutputError):
            world.run(run_id, execution, Stage.PLAN)

    ledger = world.ledger.load(run_id)
    assert ledger.stages["plan"].status == StageStatus.FAILED
    assert {ref.name for ref in ledger.artifacts if ref.key in ledger.stages["plan"].outputs} == {
        "model-call-1.json", "model-call-2.json"}
    outcome = world.workflow.classify(run_id, execution, {"Error": "PlannerOutputError",
                                                          "Cause": "the model's plan did not validate"}, "plan")
    assert outcome["action"] == "handoff"
    handed = world.ledger.load(run_id)
    assert handed.run.status == RunStatus.NEEDS_PERSON
    (handoff,) = [d for d in handed.decisions if d.kind == "handoff"]
    assert "model calls" in handoff.summary
