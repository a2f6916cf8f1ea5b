"""The reference agent: inspect a repository, plan tests, write them. Running them is not the
agent's job: the workflow runs the suite in a sandboxed build (agentledger.testrun).

Each step is a plain function over explicit inputs and returns a value the workflow can
fingerprint and store; nothing here touches AWS. `load_agent` lets users plug in their own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agentledger.agent.bedrock import BedrockPlanner, BedrockSettings, PlannerOutputError
from agentledger.agent.executor import Execution, apply_files, write_tests
from agentledger.agent.inventory import (
    Inventory,
    ModuleInfo,
    ObjectInfo,
    inspect_repository,
)
from agentledger.agent.planner import (
    DocstringExamplePlanner,
    Example,
    ModelCall,
    Plan,
    PlanBrief,
    PlanItem,
    Planner,
    PynguinPlanner,
    SkippedTarget,
    repository_config,
)
from agentledger.generation import GenerationLimits, GenerationSettings
from agentledger.source import ArchiveError, SourceSnapshot, changed_files, extract_tarball, snapshot_directory

if TYPE_CHECKING:
    import os

__all__ = [
    "Agent",
    "ArchiveError",
    "BedrockPlanner",
    "BedrockSettings",
    "ModelCall",
    "PlannerOutputError",
    "DocstringExamplePlanner",
    "Example",
    "Execution",
    "GenerationLimits",
    "GenerationSettings",
    "ObjectInfo",
    "Inventory",
    "ModuleInfo",
    "Plan",
    "PlanBrief",
    "PlanItem",
    "Planner",
    "PynguinPlanner",
    "ReferenceAgent",
    "SkippedTarget",
    "SourceSnapshot",
    "apply_files",
    "changed_files",
    "extract_tarball",
    "inspect_repository",
    "load_agent",
    "snapshot_directory",
    "write_tests",
]


@runtime_checkable
class Agent(Protocol):
    def inspect(self, snapshot: SourceSnapshot) -> Inventory: ...

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan: ...

    def execute(
        self, plan: Plan, snapshot: SourceSnapshot, workspace: str | os.PathLike[str]
    ) -> Execution: ...


class ReferenceAgent:
    """Inspects with the standard library's ast, plans with the deployment's writer (Pynguin unless
    it says otherwise) or the one the repository chooses (`writer` in agentledger.toml), and
    renders the candidates the plan carries."""

    def __init__(self, planner: Planner | None = None, limits: GenerationLimits | None = None) -> None:
        limits = limits or GenerationLimits()
        self.planner = planner or PynguinPlanner(limits)
        # What a repository may choose for itself; a model-backed writer is the deployment's to turn on.
        self.writers: dict[str, Planner] = {"pynguin": PynguinPlanner(limits),
                                            "doctest": DocstringExamplePlanner(limits)}

    def inspect(self, snapshot: SourceSnapshot) -> Inventory:
        return inspect_repository(snapshot)

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        config = repository_config(snapshot)
        chosen = self.writers.get(config.writer) if config is not None and config.writer else None
        return (chosen or self.planner).plan(inventory, snapshot, brief)

    def execute(self, plan: Plan, snapshot: SourceSnapshot, workspace: str | os.PathLike[str]) -> Execution:
        return write_tests(plan, snapshot, workspace)


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
            "which lacks inspect/plan/execute"
        )
    return agent
