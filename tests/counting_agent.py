"""A pass-through agent plug-in (AGENTLEDGER_AGENT=tests.counting_agent:CountingAgent) that
counts how often each piece of agent work really ran, per repository or workspace, so the
reliability tests can assert that completed stages are never redone."""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentledger.agent import DocstringExamplePlanner, ReferenceAgent

if TYPE_CHECKING:
    import os

SPEC = "tests.counting_agent:CountingAgent"
_calls: Counter[tuple[str, str]] = Counter()
_lock = threading.Lock()


def _count(method: str, where: str | os.PathLike[str]) -> None:
    with _lock:
        _calls[(method, str(Path(where).resolve()))] += 1


def calls(method: str, where: str | os.PathLike[str]) -> int:
    """How often `method` ran on a repository root (inspect, plan) or inside a workspace path
    that contains `where` (execute, verify, whose workspaces are named by run id)."""
    target = str(Path(where).resolve()) if Path(where).is_absolute() else str(where)
    with _lock:
        return sum(n for (m, path), n in _calls.items()
                   if m == method and (path == target or path.endswith(f"/{target}") or f"/{target}/" in path))


class CountingAgent(ReferenceAgent):
    """The docstring-example writer: the durable layer's tests need real builds, not Pynguin's
    minute of search per run (tests/e2e/test_generation.py runs Pynguin)."""

    def __init__(self) -> None:
        super().__init__(planner=DocstringExamplePlanner())

    def inspect(self, snapshot: Any) -> Any:
        _count("inspect", snapshot.root)
        return super().inspect(snapshot)

    def plan(self, inventory: Any, snapshot: Any, brief: Any) -> Any:
        _count("plan", snapshot.root)
        return super().plan(inventory, snapshot, brief)

    def execute(self, plan: Any, snapshot: Any, workspace: Any) -> Any:
        _count("execute", workspace)
        return super().execute(plan, snapshot, workspace)
