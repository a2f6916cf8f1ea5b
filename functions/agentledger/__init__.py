"""agentledger: the durable ledger, artifacts, effects and restart policy of a staged agent run.

A plug-in's public face is here: the agent interface (documented on the reference's agent page),
the errors every refusal is one of, and `__version__`; `agentledger.testing` is the in-memory world
to test a plug-in on. The names are imported on first use, so a Lambda function that imports
`agentledger.handlers` pays for none of them at its cold start."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentledger.agent import (
        Agent,
        Execution,
        Inventory,
        Plan,
        PlanBrief,
        Planner,
        ReferenceAgent,
        SourceSnapshot,
        load_agent,
    )
    from agentledger.errors import LedgerError, TransientError

__version__ = "0.1.0"

# The names above, for `from agentledger import *` and for __getattr__ (tests/unit/test_public_face.py
# checks that the two lists agree).
__all__ = [
    "Agent", "Execution", "Inventory", "LedgerError", "Plan", "PlanBrief", "Planner", "ReferenceAgent",
    "SourceSnapshot", "TransientError", "__version__", "load_agent",
]
_DEFINED_IN = ("agentledger.agent", "agentledger.errors")


def __getattr__(name: str) -> Any:
    if name in __all__:
        for module in map(importlib.import_module, _DEFINED_IN):
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(f"module 'agentledger' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
