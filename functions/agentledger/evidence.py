"""The evidence graph, declared once: which fact each stage records and which upstream facts it
builds on. The stages record evidence through it, the assessment and the review judge validity
by it, and the tests build ledgers from it."""
from __future__ import annotations

from dataclasses import dataclass

from .agent.source import SourceSnapshot
from .fingerprints import digest
from .models import Evidence, Ledger
from .states import WORK_STAGES, RunOutcome, Stage

UPSTREAM_PREFIX = "evidence:"
FILE_PREFIX = "file:"


@dataclass(frozen=True)
class EvidenceNode:
    name: str
    upstream: tuple[Stage, ...]  # stages whose evidence this one depends on


EVIDENCE_GRAPH: dict[Stage, EvidenceNode] = {
    Stage.INSPECT: EvidenceNode("source_tree", ()),
    Stage.PLAN: EvidenceNode("plan", (Stage.INSPECT,)),
    Stage.EXECUTE: EvidenceNode("test_changes", (Stage.PLAN,)),
    # The tests ran against the source tree as well as against the written tests.
    Stage.VERIFY: EvidenceNode("test_run", (Stage.EXECUTE, Stage.INSPECT)),
    Stage.AWAIT_REVIEW: EvidenceNode("approval", (Stage.PLAN, Stage.VERIFY)),
    Stage.COMPLETE: EvidenceNode("summary", (Stage.AWAIT_REVIEW,)),
}
EVIDENCE_OF: dict[Stage, str] = {stage: node.name for stage, node in EVIDENCE_GRAPH.items()}
assert tuple(EVIDENCE_GRAPH) == WORK_STAGES, "the evidence graph names every stage, in order"
# A plan that writes nothing leaves nothing to execute, verify or approve: such a run goes from
# plan to complete, and its summary builds on the plan.
NOTHING_TO_DO_PATH: tuple[Stage, ...] = (Stage.INSPECT, Stage.PLAN, Stage.COMPLETE)
NOTHING_TO_DO_UPSTREAM: dict[Stage, tuple[Stage, ...]] = {Stage.COMPLETE: (Stage.PLAN,)}


def stages_of(ledger: Ledger) -> tuple[Stage, ...]:
    """The stages this run goes through, as its plan decided."""
    return NOTHING_TO_DO_PATH if ledger.run.outcome == RunOutcome.NOTHING_TO_DO else WORK_STAGES


def upstream_of(ledger: Ledger, stage: Stage) -> tuple[Stage, ...]:
    if ledger.run.outcome == RunOutcome.NOTHING_TO_DO:
        return NOTHING_TO_DO_UPSTREAM.get(stage, EVIDENCE_GRAPH[stage].upstream)
    return EVIDENCE_GRAPH[stage].upstream


def stages_before(ledger: Ledger, stage: Stage) -> list[Stage]:
    """The stages of this run's path that come before `stage`."""
    return [s for s in stages_of(ledger) if WORK_STAGES.index(s) < WORK_STAGES.index(stage)]


def source_dependencies(snapshot: SourceSnapshot) -> dict[str, str]:
    """What inspect read: the revision, the whole tree (to catch added files) and each file."""
    deps = {"revision": snapshot.revision, "tree": digest(snapshot.files)}
    deps.update({f"{FILE_PREFIX}{path}": sha for path, sha in snapshot.files.items()})
    return deps


def file_dependencies(files: dict[str, str]) -> dict[str, str]:
    return {f"{FILE_PREFIX}{path}": sha for path, sha in files.items()}


def recorded_files(depends_on: dict[str, str]) -> dict[str, str]:
    return {key.removeprefix(FILE_PREFIX): sha for key, sha in depends_on.items() if key.startswith(FILE_PREFIX)}


def stage_evidence(stage: Stage, fingerprint: str, ledger: Ledger,
                   reads: dict[str, str] | None = None) -> Evidence:
    """The evidence `stage` records: its fingerprint, the fingerprints of the upstream evidence
    the graph names (as they are in `ledger` now), and what it read of the world."""
    depends_on = {f"{UPSTREAM_PREFIX}{EVIDENCE_OF[up]}": ledger.evidence[EVIDENCE_OF[up]].fingerprint
                  for up in upstream_of(ledger, stage)}
    depends_on.update(reads or {})
    return Evidence(name=EVIDENCE_OF[stage], stage=stage, fingerprint=fingerprint, depends_on=depends_on)
