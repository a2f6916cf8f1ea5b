"""The reference agent, counting the work each stage really did."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from agentledger.agent import ReferenceAgent

if TYPE_CHECKING:
    import os


class InstantAgent(ReferenceAgent):
    """Inspects, plans and writes tests for real (pure Python, fast); the test run is the
    fake build's (infra/agentledger/testing/builds.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.briefs: list[Any] = []

    def inspect(self, snapshot: Any) -> Any:
        self.calls["inspect"] += 1
        return super().inspect(snapshot)

    def plan(self, inventory: Any, snapshot: Any, brief: Any) -> Any:
        self.calls["plan"] += 1
        self.briefs.append(brief)
        return super().plan(inventory, snapshot, brief)

    def execute(self, plan: Any, snapshot: Any, workspace: str | os.PathLike[str]) -> Any:
        self.calls["execute"] += 1
        return super().execute(plan, snapshot, workspace)
