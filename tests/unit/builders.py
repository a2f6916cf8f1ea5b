"""Small builders for ledgers and source snapshots, shaped the way the workflow records them
(see agentledger.workflow: each stage's Evidence and what it depends on)."""
from __future__ import annotations

from pathlib import Path

from agentledger.agent.source import SourceSnapshot
from agentledger.fingerprints import digest, sha256_bytes
from agentledger.models import Evidence, Ledger, Run, Stage, StageRecord, StageStatus
from agentledger.restart import EVIDENCE_OF, source_dependencies

REVISION = "rev-1"
FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "util.py": "def helper():\n    return 1\n",
    "pkg/__init__.py": "",
}
# The plan only reads calc.py: a change elsewhere affects it only through the source tree.
PLAN_READS = ("calc.py",)


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
    """The evidence every stage records, in stage order, as the workflow builds it."""
    source_tree = Evidence(name="source_tree", stage=Stage.INSPECT,
                           fingerprint=digest({"revision": snap.revision, "files": snap.files}),
                           depends_on=source_dependencies(snap))
    plan = Evidence(name="plan", stage=Stage.PLAN, fingerprint=plan_fingerprint,
                    depends_on={"evidence:source_tree": source_tree.fingerprint, "revision": snap.revision,
                                **{f"file:{p}": snap.files[p] for p in plan_reads}})
    test_changes = Evidence(name="test_changes", stage=Stage.EXECUTE, fingerprint="sha256:tests-1",
                            depends_on={"evidence:plan": plan.fingerprint})
    test_run = Evidence(name="test_run", stage=Stage.VERIFY, fingerprint="sha256:run-1",
                        depends_on={"evidence:test_changes": test_changes.fingerprint,
                                    "evidence:source_tree": source_tree.fingerprint})
    approval = Evidence(name="approval", stage=Stage.AWAIT_REVIEW, fingerprint="sha256:approval-1",
                        depends_on={"evidence:plan": plan.fingerprint, "evidence:test_run": test_run.fingerprint})
    summary = Evidence(name="summary", stage=Stage.COMPLETE, fingerprint="sha256:summary-1",
                       depends_on={"evidence:approval": approval.fingerprint})
    return {e.name: e for e in (source_tree, plan, test_changes, test_run, approval, summary)}


def run(**changes: object) -> Run:
    fields: dict[str, object] = {"run_id": "run-0123456789abcdef0123", "request": "add tests for calc",
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
    return Ledger(
        run=run(replans=replans),
        stages={stage.value: stage_record(stage) for stage in done},
        evidence={EVIDENCE_OF[stage]: chain[EVIDENCE_OF[stage]] for stage in done},
    )
