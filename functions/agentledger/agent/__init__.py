"""The reference agent: inspect a repository, plan tests, write them, run them.

Each step is a plain function over explicit inputs and returns a value the workflow can
fingerprint and store; nothing here touches AWS. `load_agent` lets users plug in their own.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentledger.agent.executor import Execution, apply_files, write_tests
from agentledger.agent.inventory import (
    FunctionInfo,
    Inventory,
    ModuleInfo,
    inspect_repository,
)
from agentledger.agent.planner import (
    GENERATED_TESTS_DIR,
    DocstringExamplePlanner,
    Example,
    Plan,
    PlanItem,
    Planner,
    SkippedTarget,
)
from agentledger.agent.source import (
    ArchiveError,
    SourceSnapshot,
    changed_files,
    extract_tarball,
    snapshot_directory,
)
from agentledger.agent.verifier import Verification, resolve_test_command, run_tests

__all__ = [
    "Agent",
    "ArchiveError",
    "DocstringExamplePlanner",
    "Example",
    "Execution",
    "FunctionInfo",
    "Inventory",
    "ModuleInfo",
    "Plan",
    "PlanItem",
    "Planner",
    "ReferenceAgent",
    "SkippedTarget",
    "SourceSnapshot",
    "Verification",
    "apply_files",
    "changed_files",
    "extract_tarball",
    "inspect_repository",
    "load_agent",
    "resolve_test_command",
    "run_tests",
    "snapshot_directory",
    "write_tests",
]


@runtime_checkable
class Agent(Protocol):
    def inspect(self, snapshot: SourceSnapshot) -> Inventory: ...

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot) -> Plan: ...

    def execute(
        self, plan: Plan, snapshot: SourceSnapshot, workspace: str | os.PathLike[str]
    ) -> Execution: ...

    def verify(self, workspace: str | os.PathLike[str], timeout_s: float) -> Verification: ...


class ReferenceAgent:
    def __init__(self, planner: Planner | None = None, test_command: list[str] | None = None) -> None:
        self.planner = planner or DocstringExamplePlanner()
        self.test_command = list(test_command) if test_command is not None else resolve_test_command()

    def inspect(self, snapshot: SourceSnapshot) -> Inventory:
        return inspect_repository(snapshot)

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot) -> Plan:
        return self.planner.plan(inventory, snapshot)

    def execute(self, plan: Plan, snapshot: SourceSnapshot, workspace: str | os.PathLike[str]) -> Execution:
        return write_tests(plan, snapshot, workspace)

    def verify(self, workspace: str | os.PathLike[str], timeout_s: float) -> Verification:
        if not any((Path(workspace) / GENERATED_TESTS_DIR).glob("test_*.py")):
            # Nothing was planned: there is nothing to verify (and unittest on Python 3.12+
            # exits 5 when it finds no test, which would read as a failure).
            return Verification(command=self.test_command, exit_code=0, duration_s=0.0, timed_out=False,
                                passed=True, output="no tests were generated for this plan; nothing to run\n")
        return run_tests(workspace, self.test_command, timeout_s)


def load_agent(spec: str | None) -> Agent:
    """None gives the ReferenceAgent; "package.module:factory" calls that factory for a custom agent."""
    if spec is None:
        return ReferenceAgent()
    module_name, _, factory_name = spec.partition(":")
    if not module_name or not factory_name:
        raise ValueError(f"agent spec {spec!r} is not of the form 'package.module:factory'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"agent spec {spec!r}: cannot import {module_name!r}: {error}") from error
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ValueError(f"agent spec {spec!r}: {module_name} has no callable {factory_name!r}")
    agent = factory()
    if not isinstance(agent, Agent):
        raise ValueError(
            f"agent spec {spec!r}: {factory_name}() returned {type(agent).__name__}, "
            "which lacks inspect/plan/execute/verify"
        )
    return agent
