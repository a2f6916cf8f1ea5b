"""What a plug-in's author imports: `agentledger`'s public names, each the object its module defines,
loaded only when first used; its version, the installed distribution's; and `agentledger.testing`,
on which a plug-in's agent runs a whole run to review in memory."""
from __future__ import annotations

import ast
import importlib.metadata
import inspect
import subprocess
import sys
from typing import TYPE_CHECKING

import agentledger
from agentledger.agent import ReferenceAgent
from agentledger.models import RunStatus
from agentledger.testing import REQUESTER, build_world

if TYPE_CHECKING:
    from pathlib import Path

    from agentledger.agent import Inventory, SourceSnapshot


def _names_imported_for_type_checkers() -> set[str]:
    tree = ast.parse(inspect.getsource(agentledger))
    guarded = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.name for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_every_public_name_is_the_object_its_module_defines_and_type_checkers_see_the_same_names() -> None:
    public = set(agentledger.__all__) - {"__version__"}

    assert _names_imported_for_type_checkers() == public
    for name in public:
        defined = getattr(agentledger, name)
        assert getattr(sys.modules[defined.__module__], name) is defined
    assert {"Agent", "ReferenceAgent", "LedgerError"} <= public


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        agentledger.NoSuchThing  # noqa: B018 — the access is what is tested
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("agentledger.NoSuchThing resolved")


def test_importing_agentledger_loads_none_of_its_public_modules_until_a_name_is_used() -> None:
    probe = "import sys, agentledger; print(sorted(m for m in sys.modules if m.startswith('agentledger')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout

    assert loaded.strip() == "['agentledger']"


def test_the_version_is_the_installed_distributions() -> None:
    assert agentledger.__version__ == importlib.metadata.version("agentledger")


class NamingAgent(ReferenceAgent):
    """A plug-in as its author writes one: the reference agent, with one step of its own."""

    def inspect(self, snapshot: SourceSnapshot) -> Inventory:
        inventory = super().inspect(snapshot)
        self.modules_seen = len(inventory.modules)
        return inventory


def test_a_plug_in_agent_runs_to_review_in_the_testing_world(tmp_path: Path) -> None:
    agent = NamingAgent()
    world = build_world(tmp_path, agent=agent)

    run_id, _ = world.to_review()

    ledger = world.ledger.load(run_id)
    assert ledger.run.status == RunStatus.AWAITING_REVIEW and ledger.run.requested_by == REQUESTER
    assert agent.modules_seen >= 1 and ledger.run.plan_digest == ledger.evidence["plan"].fingerprint
