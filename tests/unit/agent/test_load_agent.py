from __future__ import annotations

import pytest

from agentledger.agent import (
    Example,
    Plan,
    PlanItem,
    PynguinPlanner,
    ReferenceAgent,
    load_agent,
    snapshot_directory,
)

from .samples import BRIEF, make_sample_repo, write

CUSTOM_AGENTS = '''\
from agentledger.agent import ReferenceAgent


class Wrapped(ReferenceAgent):
    pass


def make_agent():
    return Wrapped()


def make_nothing():
    return object()


NOT_CALLABLE = 42
'''


@pytest.fixture
def custom_agents_module(tmp_path, monkeypatch):
    write(tmp_path / "plugins", "acme_custom_agents.py", CUSTOM_AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    return "acme_custom_agents"


def test_no_spec_gives_the_reference_agent():
    agent = load_agent(None)
    assert isinstance(agent, ReferenceAgent)
    assert isinstance(agent.planner, PynguinPlanner)  # the default writer for Python
    assert set(agent.writers) == {"pynguin", "doctest"}  # what a repository may choose for itself


def test_a_spec_names_a_factory_that_builds_the_agent(custom_agents_module):
    agent = load_agent(f"{custom_agents_module}:make_agent")
    assert type(agent).__name__ == "Wrapped"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("acme_custom_agents", "not of the form"),
        (":make_agent", "not of the form"),
        ("acme_custom_agents:", "not of the form"),
        ("acme_no_such_module:make_agent", "cannot import 'acme_no_such_module'"),
        ("acme_custom_agents:missing", "has no callable 'missing'"),
        ("acme_custom_agents:NOT_CALLABLE", "has no callable 'NOT_CALLABLE'"),
        ("acme_custom_agents:make_nothing", "returned object, which lacks inspect/plan/execute"),
    ],
)
def test_a_bad_spec_is_a_clear_error(custom_agents_module, spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec)


class SingleExamplePlanner:
    """A user's planner: the reference agent writes and runs whatever it plans."""

    name = "single-example"

    def plan(self, inventory, snapshot, brief):
        item = PlanItem(
            target="pkg/calc.py::multiply",
            test_path="tests/test_multiply.py",
            rationale="asked for by the user",
            examples=[Example(source="multiply(3, 4)", expected="12")],
        )
        return Plan(planner=self.name, revision=snapshot.revision, items=[item], skipped=[], files_read={})


def test_the_reference_agent_runs_a_plugged_in_planner(tmp_path):
    agent = ReferenceAgent(planner=SingleExamplePlanner())
    snapshot = snapshot_directory(make_sample_repo(tmp_path / "repo"))
    plan = agent.plan(agent.inspect(snapshot), snapshot, BRIEF)
    execution = agent.execute(plan, snapshot, tmp_path / "ws")
    assert "tests/test_multiply.py" in execution.files
    assert "multiply(3, 4)" in execution.files["tests/test_multiply.py"]
