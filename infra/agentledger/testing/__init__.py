"""The in-memory world agentledger's own unit tests run on, for a plug-in's tests.

`build_world(tmp_path, agent=MyAgent())` wires the real Workflow, RunService and EffectRunner to
in-memory stand-ins for every port (ledger, artifacts, executions, metrics, builds, a ticket
tracker), so an agent's stages run end to end in milliseconds, with no AWS SDK and no network:

    world = build_world(tmp_path, agent=MyAgent())
    run_id, _ = world.to_review()
    assert world.ledger.get_run(run_id).plan_digest

Host-only: the Lambda code asset leaves this package out."""

from agentledger.testing.agent import InstantAgent
from agentledger.testing.world import REQUESTER, REVIEWER, World, build_world

__all__ = ["REQUESTER", "REVIEWER", "InstantAgent", "World", "build_world"]
