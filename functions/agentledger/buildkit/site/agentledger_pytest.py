"""A pytest plugin a generation build loads (`-p agentledger_pytest`):
- AGENTLEDGER_ORDER_SEED set: the suite runs in an order shuffled by it, so that a candidate test
  that passes only after (or before) some other test is caught by one of the five runs;
- AGENTLEDGER_COLLECTED set: the node ids pytest collected are written there, one a line, so the
  build filter knows which candidates were collected (JUnit lists none under --collect-only).
Standard library only, Python 3.9+."""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    seed = os.environ.get("AGENTLEDGER_ORDER_SEED")
    if seed is not None:
        random.Random(seed).shuffle(items)


def pytest_collection_finish(session: Any) -> None:
    path = os.environ.get("AGENTLEDGER_COLLECTED")
    if path:
        with Path(path).open("w", encoding="utf-8") as collected:
            collected.writelines(f"{item.nodeid}\n" for item in session.items)
