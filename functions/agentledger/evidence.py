"""The evidence graph, declared once: which fact each stage records and which upstream facts it
builds on. The stages record evidence through it, the assessment and the review judge validity
by it, and the tests build ledgers from it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .fingerprints import digest
from .models import ArtifactRef, Evidence, Ledger
from .states import WORK_STAGES, RunOutcome, Stage

if TYPE_CHECKING:
    from agentledger.source import SourceSnapshot

UPSTREAM_PREFIX = "evidence:"
# What a stage read of the repository, recorded in a size that does not grow with it: the files'
# fingerprints (path -> sha256) are a manifest artifact; the ledger keeps the manifest's key, the
# digest of what it lists and the digest of the whole tree they were read from.
MANIFEST, FILES, TREE = "manifest", "files", "tree"


@dataclass(frozen=True)
class EvidenceNode:
    name: str
    upstream: tuple[Stage, ...]  # stages whose evidence this one depends on
    reads_whole_tree: bool = False  # a file added anywhere makes it stale, too


EVIDENCE_GRAPH: dict[Stage, EvidenceNode] = {
    Stage.INSPECT: EvidenceNode("source_tree", (), reads_whole_tree=True),
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


def file_reads(files: dict[str, str], snapshot: SourceSnapshot, manifest: ArtifactRef) -> dict[str, str]:
    """What a stage read: `files` (listed in `manifest`) of `snapshot`, at its revision."""
    files_digest = snapshot.tree_digest if files is snapshot.files else digest(files)
    return {"revision": snapshot.revision, FILES: files_digest, TREE: snapshot.tree_digest, MANIFEST: manifest.key}


def manifest_ref(ledger: Ledger, depends_on: dict[str, str]) -> ArtifactRef | None:
    """The manifest artifact that evidence's file reads are listed in, as the ledger holds it."""
    key = depends_on.get(MANIFEST)
    return next((ref for ref in ledger.artifacts if ref.key == key), None) if key else None


def stage_evidence(stage: Stage, fingerprint: str, ledger: Ledger,
                   reads: dict[str, str] | None = None) -> Evidence:
    """The evidence `stage` records: its fingerprint, the fingerprints of the upstream evidence
    the graph names (as they are in `ledger` now), and what it read of the world."""
    depends_on = {f"{UPSTREAM_PREFIX}{EVIDENCE_OF[up]}": ledger.evidence[EVIDENCE_OF[up]].fingerprint
                  for up in upstream_of(ledger, stage)}
    depends_on.update(reads or {})
    return Evidence(name=EVIDENCE_OF[stage], stage=stage, fingerprint=fingerprint, depends_on=depends_on)
