"""The Bedrock writer on a Maven project: it is asked for JUnit 5 classes, and what it answers is
placed where Maven's layout puts a test of that package, checked by name and layout (never compiled
here: the build compiles and filters it in the sandbox), and sent back when it does not fit."""
from __future__ import annotations

import io
import json
import shutil
import tarfile
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.stub import Stubber

from agentledger.agent import (
    BedrockPlanner,
    BedrockSettings,
    ReferenceAgent,
    inspect_repository,
    java,
    snapshot_directory,
)
from agentledger.agent.bedrock import PLAN_TOOL
from agentledger.buildkit import layout
from agentledger.models import Stage
from agentledger.testing.world import build_world
from agentledger.workflow.writing import language_of, targets_of
from tests.samples import write_maven_sample

from .samples import BRIEF

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.unit
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
UNITS = """package demo;

public final class Units {
    private Units() {}

    public static double celsius(double fahrenheit) {
        return (fahrenheit - 32) * 5 / 9;
    }
}
"""
UNITS_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class UnitsCelsiusTest {
    @Test
    void freezingIsZero() {
        assertEquals(0.0, Units.celsius(32), 1e-9);
    }
}
"""
GOOD = {"modules": [{"path": "src/main/java/demo/Units.java", "rationale": "no test calls celsius",
                     "code": UNITS_TEST}]}


def _repo(root: Path) -> Path:
    write_maven_sample(root)
    (root / "src/main/java/demo/Units.java").write_text(UNITS)
    return root


def _answer(tool_input: dict) -> dict:
    return {"output": {"message": {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "tool-1", "name": PLAN_TOOL, "input": tool_input}}]}},
            "stopReason": "tool_use", "usage": {"inputTokens": 900, "outputTokens": 120, "totalTokens": 1020},
            "metrics": {"latencyMs": 700}}


def _plan(repo: Path, *answers: dict):
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="offline",
                          aws_secret_access_key="offline")
    planner = BedrockPlanner(client, BedrockSettings(model_id=MODEL, max_tokens=2048, temperature=0.0, max_reasks=2,
                                                     prices={"input": 0.001, "output": 0.005}))
    snapshot = snapshot_directory(repo)
    with Stubber(client) as stub:
        for answer in answers:
            stub.add_response("converse", answer)
        plan = planner.plan(inspect_repository(snapshot), snapshot, BRIEF)
        stub.assert_no_pending_responses()
    return plan


def test_the_inventory_finds_the_public_java_methods_no_test_calls(tmp_path):
    inventory = inspect_repository(snapshot_directory(_repo(tmp_path / "repo")))
    assert inventory.untested == ["src/main/java/demo/Units.java::Units",
                                  "src/main/java/demo/Units.java::Units.celsius"]
    shapes = next(module for module in inventory.modules if module.path == "src/main/java/demo/Shapes.java")
    assert [(obj.name, obj.kind, obj.tested) for obj in shapes.objects] == [
        ("Shapes", "class", True), ("Shapes.sign", "method", True), ("Shapes.area", "method", True)]


def test_on_a_maven_project_the_model_is_asked_for_junit_and_its_class_goes_into_the_test_sources(tmp_path):
    plan = _plan(_repo(tmp_path / "repo"), _answer(GOOD))
    assert [(item.target, item.test_path, item.code) for item in plan.items] == [
        ("src/main/java/demo/Units.java::", "src/test/java/demo/UnitsCelsiusTest.java", UNITS_TEST)]
    (call,) = plan.model_calls
    assert "JUnit 5" in call.request["system"][0]["text"]
    prompt = call.request["messages"][0]["content"][0]["text"]
    assert "- src/main/java/demo/Units.java::Units.celsius" in prompt and "```java" in prompt
    assert "Shapes.sign" not in prompt  # tested already
    assert language_of(plan) == "java"
    assert targets_of(plan) == [{"module": "demo.Units", "path": "src/main/java/demo/Units.java",
                                 "test_path": "src/test/java/demo/UnitsCelsiusTest.java", "names": []}]


@pytest.mark.parametrize(("code", "complaint"), [
    (UNITS_TEST.replace("package demo;", "package elsewhere;"), "must declare `package demo;`"),
    (UNITS_TEST.replace("UnitsCelsiusTest", "ShapesTest"), "exists already"),
    (UNITS_TEST.replace("UnitsCelsiusTest", "CelsiusChecks"), "name ends in Test"),
    (UNITS_TEST.replace("@Test", "@Disabled"), "has no @Test method"),
    ("def test_celsius():\n    assert True\n", "must declare `package demo;`"),
])
def test_a_class_that_does_not_fit_the_layout_is_sent_back(tmp_path, code, complaint):
    bad = {"modules": [{**GOOD["modules"][0], "code": code}]}
    plan = _plan(_repo(tmp_path / "repo"), _answer(bad), _answer(GOOD))
    assert [item.test_path for item in plan.items] == ["src/test/java/demo/UnitsCelsiusTest.java"]
    sent_back = plan.model_calls[1].request["messages"][-1]["content"][0]["toolResult"]
    assert complaint in sent_back["content"][0]["text"]


def test_a_java_path_is_read_by_its_maven_layout():
    assert java.class_name("src/main/java/demo/Shapes.java") == "demo.Shapes"
    assert java.class_name("core/src/main/java/a/b/C.java") == "a.b.C"
    assert java.class_name("mysrc/main/java/a/C.java") is None
    assert java.class_name("src/test/java/a/CTest.java") is None
    assert java.junit_test_path("core/src/main/java/a/b/C.java", UNITS_TEST.replace("package demo;", "package a.b;")) \
        == "core/src/test/java/a/b/UnitsCelsiusTest.java"


def test_the_execute_stage_sends_a_maven_projects_junit_plan_to_the_generation_build(tmp_path):
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="offline",
                          aws_secret_access_key="offline")
    planner = BedrockPlanner(client, BedrockSettings(model_id=MODEL, max_tokens=2048, temperature=0.0, max_reasks=0,
                                                     prices={}))
    world = build_world(tmp_path, agent=ReferenceAgent(planner=planner))
    shutil.rmtree(world.repo)
    _repo(world.repo)
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT)
    with Stubber(client) as stub:
        stub.add_response("converse", _answer(GOOD))
        world.run(run_id, execution, Stage.PLAN)
    world.workflow.run_stage(Stage.EXECUTE, run_id, execution)

    [build] = world.builds.generations
    with tarfile.open(fileobj=io.BytesIO(world.artifacts.objects[build.input_url.split("/", 3)[3]])) as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]
    request = json.loads(members[layout.GENERATION_REQUEST_FILE])
    assert (request["language"], request["candidate_files"]) == ("java", ["src/test/java/demo/UnitsCelsiusTest.java"])
    assert members["repository/src/test/java/demo/UnitsCelsiusTest.java"].decode() == UNITS_TEST
    assert f"{layout.KIT_DIR}/generation_java.py" in members  # the filters that run it
