"""Small builders for ledgers and source snapshots, shaped the way the workflow records them
(see agentledger.evidence: the graph of what each stage's evidence depends on)."""
from __future__ import annotations

from pathlib import Path

from agentledger.evidence import EVIDENCE_OF, file_reads, stage_evidence
from agentledger.fingerprints import digest, sha256_bytes
from agentledger.models import ArtifactRef, Evidence, Ledger, Run, Stage, StageRecord, StageStatus
from agentledger.source import SourceSnapshot
from agentledger.testing.adapters import InMemoryArtifacts

REVISION = "rev-1"
FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "util.py": "def helper():\n    return 1\n",
    "pkg/__init__.py": "",
}
# The plan only reads calc.py: a change elsewhere affects it only through the source tree.
PLAN_READS = ("calc.py",)
RUN_ID = "run-0123456789abcdef0123"
# Where the file manifests the evidence names are kept, as the stages keep them in S3.
ARTIFACTS = InMemoryArtifacts()
MANIFESTS: dict[str, ArtifactRef] = {}


def read_manifest(ref: ArtifactRef) -> dict[str, str] | None:
    return ARTIFACTS.read_manifest(ref)


def _manifest(stage: Stage, files: dict[str, str]) -> ArtifactRef:
    ref = ARTIFACTS.put_json(RUN_ID, stage, f"{stage}-manifest.json", files)
    MANIFESTS[ref.key] = ref
    return ref


def manifests_of(evidence: list[Evidence]) -> list[ArtifactRef]:
    """The manifest artifacts `evidence` names, as a ledger holds them."""
    return [MANIFESTS[e.depends_on["manifest"]] for e in evidence if "manifest" in e.depends_on]


def sha(text: str) -> str:
    return sha256_bytes(text.encode())


def snapshot(contents: dict[str, str] | None = None, revision: str = REVISION) -> SourceSnapshot:
    contents = FILES if contents is None else contents
    return SourceSnapshot(root=Path("/repo"), revision=revision,
                          files={path: sha(text) for path, text in contents.items()})


def edited(path: str, text: str, revision: str = REVISION) -> SourceSnapshot:
    return snapshot({**FILES, path: text}, revision)


def without(path: str, revision: str = REVISION) -> SourceSnapshot:
    return snapshot({p: t for p, t in FILES.items() if p != path}, revision)


def stage_record(stage: Stage, status: StageStatus = StageStatus.COMPLETE, attempt: int = 1) -> StageRecord:
    return StageRecord(stage=stage, status=status, attempt=attempt, execution="run-x-start",
                       started_at="2024-01-01T00:00:00.000+00:00", finished_at="2024-01-01T00:00:01.000+00:00")


def evidence_chain(snap: SourceSnapshot, plan_reads: tuple[str, ...] = PLAN_READS,
                   plan_fingerprint: str = "sha256:plan-1") -> dict[str, Evidence]:
    """The evidence every stage records, in stage order, through the one evidence graph."""
    fingerprints = {Stage.INSPECT: digest({"revision": snap.revision, "tree": snap.tree_digest}),
                    Stage.PLAN: plan_fingerprint, Stage.EXECUTE: "sha256:tests-1", Stage.VERIFY: "sha256:run-1",
                    Stage.AWAIT_REVIEW: "sha256:approval-1", Stage.COMPLETE: "sha256:summary-1"}
    plan_files = {p: snap.files[p] for p in plan_reads}
    reads = {Stage.INSPECT: file_reads(snap.files, snap, _manifest(Stage.INSPECT, snap.files)),
             Stage.PLAN: file_reads(plan_files, snap, _manifest(Stage.PLAN, plan_files))}
    recorded = Ledger(run=run())
    for stage in Stage:
        evidence = stage_evidence(stage, fingerprints[stage], recorded, reads.get(stage))
        recorded.evidence[evidence.name] = evidence
    return recorded.evidence


def run(**changes: object) -> Run:
    fields: dict[str, object] = {"run_id": RUN_ID, "request": "add tests for calc",
                                 "repository": "/repo", "revision": REVISION, "environment": "dev"}
    fields.update(changes)
    return Run(**fields)  # type: ignore[arg-type]


def ledger(snap: SourceSnapshot | None = None, *, through: Stage | None = Stage.COMPLETE,
           replans: int = 0, plan_reads: tuple[str, ...] = PLAN_READS) -> Ledger:
    """A ledger whose stages up to and including `through` are complete with their evidence
    recorded against `snap` (None: nothing done yet)."""
    snap = snap or snapshot()
    done = list(Stage)[: list(Stage).index(through) + 1] if through is not None else []
    chain = evidence_chain(snap, plan_reads)
    evidence = {EVIDENCE_OF[stage]: chain[EVIDENCE_OF[stage]] for stage in done}
    return Ledger(
        run=run(replans=replans),
        stages={stage.value: stage_record(stage) for stage in done},
        evidence=evidence,
        artifacts=manifests_of(list(evidence.values())),
    )
