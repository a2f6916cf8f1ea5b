"""The entry ritual is written once: whatever acts on a run reads the repository, judges the
evidence and assesses through `Entrance.enter`, and acts on the context it returns."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.freshness import Entrance
from agentledger.models import Run, Stage
from agentledger.restart import assess, evaluate_evidence
from tests.unit import builders as b

if TYPE_CHECKING:
    from agentledger.source import SourceSnapshot

LIBRARY = Path(__file__).resolve().parents[2] / "functions" / "agentledger"
RITUAL = ("evaluate_evidence", "assess")
MAX_REPLANS = 2


class OneSnapshot:
    """A repository that is always `snapshot`, counting how often it is read."""

    def __init__(self, snapshot: SourceSnapshot) -> None:
        self.current = snapshot
        self.reads = 0

    def snapshot(self, repository: str) -> SourceSnapshot:
        self.reads += 1
        return self.current

    def revision(self, repository: str) -> str:
        return self.current.revision


def _ritual_calls(path: Path) -> list[str]:
    calls = [node.func for node in ast.walk(ast.parse(path.read_text(), str(path))) if isinstance(node, ast.Call)]
    return [f"{path.relative_to(LIBRARY)}:{func.lineno} calls {func.id}"
            for func in calls if isinstance(func, ast.Name) and func.id in RITUAL]


def test_only_the_entrance_evaluates_evidence_or_assesses_a_run() -> None:
    callers = [call for path in sorted(LIBRARY.rglob("*.py")) if path.name not in ("freshness.py", "restart.py")
               for call in _ritual_calls(path)]
    assert callers == []


def test_an_entry_reads_the_repository_once_and_assesses_from_the_evidence_it_judged() -> None:
    ledger, edited = b.ledger(), b.edited("calc.py", "def add(a, b):\n    return b + a\n")
    sources = OneSnapshot(edited)
    entry = Entrance(sources, b.read_manifest, MAX_REPLANS).enter(ledger)

    assert entry.statuses == evaluate_evidence(ledger, edited, b.read_manifest)
    assert not any(entry.holds(stage) for stage in Stage)  # every stage builds on the source tree
    assert entry.assessment == assess(ledger, edited, MAX_REPLANS, b.read_manifest)
    assert entry.assessment is entry.assessment  # made once, when first asked
    assert sources.reads == 1


def test_a_caller_may_read_the_repository_its_own_way() -> None:
    ledger = b.ledger()
    sources = OneSnapshot(b.snapshot())
    read_by: list[Run] = []

    def read(run: Run) -> SourceSnapshot:
        read_by.append(run)
        return b.without("util.py")

    entry = Entrance(sources, b.read_manifest, MAX_REPLANS).enter(ledger, read)
    assert (read_by, sources.reads) == ([ledger.run], 0)
    assert entry.snapshot.files.keys() == b.without("util.py").files.keys()
