"""The state machine file is valid Amazon States Language, checked offline with statelint. cfn-lint
cannot check it: CDK emits the definition as an `Fn::Join` of the substituted parts."""
from __future__ import annotations

import json
import re

from statelint.config import Config
from statelint.linter import Linter

from agentledger.deploy import PROJECT_ROOT

DEFINITION = (PROJECT_ROOT / "statemachines" / "run.asl.json").read_text()
PLACEHOLDER = re.compile(r"\$\{(?P<name>\w+)\}")


def lint(definition: str) -> list[str]:
    """statelint's findings, with each `${Name}` placeholder given the shape of what CDK puts there
    (an ARN: statelint checks that a Resource is a URI)."""
    concrete = PLACEHOLDER.sub(
        lambda m: f"arn:aws:lambda:us-east-1:000000000000:function:{m['name']}", definition)
    return [str(problem) for problem in Linter.validate(concrete, Config(None, False, False))]


def test_the_state_machine_file_is_valid_states_language() -> None:
    assert PLACEHOLDER.search(DEFINITION), "the definition names its functions by substitution"
    assert lint(DEFINITION) == []


def test_the_linter_finds_a_transition_to_a_state_that_does_not_exist() -> None:
    broken = json.loads(DEFINITION)
    start = broken["StartAt"]
    broken["States"][start]["Next"] = "No such state"
    broken["States"][start].pop("End", None)

    assert any("No such state" in problem for problem in lint(json.dumps(broken)))
