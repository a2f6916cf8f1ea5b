"""The reference agent with an instant test run, counting the work each stage really did."""
from __future__ import annotations

import os
from collections import Counter
from typing import Any

from agentledger.agent import ReferenceAgent, Verification


class InstantAgent(ReferenceAgent):
    """Inspects, plans and writes tests for real (pure Python, fast); the test run is answered at
    once with `passes`, so orchestration tests need no subprocess."""

    def __init__(self, passes: bool = True) -> None:
        super().__init__(test_command=["true"])
        self.passes = passes
        self.calls: Counter[str] = Counter()

    def inspect(self, snapshot: Any) -> Any:
        self.calls["inspect"] += 1
        return super().inspect(snapshot)

    def plan(self, inventory: Any, snapshot: Any) -> Any:
        self.calls["plan"] += 1
        return super().plan(inventory, snapshot)

    def execute(self, plan: Any, snapshot: Any, workspace: str | os.PathLike[str]) -> Any:
        self.calls["execute"] += 1
        return super().execute(plan, snapshot, workspace)

    def verify(self, workspace: str | os.PathLike[str], timeout_s: float) -> Verification:
        self.calls["verify"] += 1
        return Verification(command=self.test_command, exit_code=0 if self.passes else 1, duration_s=0.0,
                            timed_out=False, passed=self.passes, output="ok\n" if self.passes else "FAILED\n")
