"""Freshness on entry: before anything acts, every piece of evidence it builds on must still
match the world; stale evidence is invalidated (once, with what changed) and the action refused."""
from __future__ import annotations

from agentledger.records import new_decision
from agentledger.source import SourceSnapshot

from . import metric_names
from .errors import ConcurrentModificationError, StaleContextError
from .evidence import EVIDENCE_OF, stages_before
from .models import WORK_STAGES, Assessment, Ledger, Record, Run, Stage, StageStatus
from .ports import LedgerPort, MetricSink
from .restart import EvidenceStatuses, ManifestReader, assess, is_stage_valid
from .states import DecisionKind, EvidenceState


def invalidate(store: LedgerPort, ledger: Ledger, assessment: Assessment, execution: str | None,
               metrics: MetricSink) -> Run:
    """Mark stale stages (and everything after them) invalid, recording what changed. Once a
    stage is invalidated it is no longer complete, so the same staleness is recorded once."""
    if not assessment.invalidated:
        return ledger.run
    records: list[Record] = [
        ledger.stages[stage.value].model_copy(update={"status": StageStatus.INVALIDATED})
        for stage in assessment.invalidated
    ]
    stale = [e.model_dump(mode="json") for e in assessment.evidence if e.status == EvidenceState.STALE]
    plan_rejected = Stage.PLAN in assessment.invalidated and any(e["name"] == EVIDENCE_OF[Stage.PLAN] for e in stale)
    records.append(
        new_decision(
            DecisionKind.STALE_PLAN_REJECTED if plan_rejected
            else (DecisionKind.STALE_CONTEXT if stale else DecisionKind.SUPERSEDED),
            f"invalidated {', '.join(assessment.invalidated)}: {assessment.reason}",
            {"invalidated": [s.value for s in assessment.invalidated], "stale_evidence": stale,
             "changed_files": assessment.changed_files, "plan_digest": ledger.run.plan_digest},
            execution,
        )
    )
    try:
        run = store.write(ledger.run, records=records, execution=execution,
                          changes={"replans": ledger.run.replans + (1 if stale else 0)},
                          reason="stale context invalidated" if stale else "superseded stages invalidated")
    except ConcurrentModificationError:
        # Another worker changed the run first (often: invalidated the same staleness). Whoever
        # acts next re-reads the ledger and re-checks, so nothing stale can be acted on.
        return store.get_run(ledger.run.run_id)
    if plan_rejected:
        metrics.count(metric_names.STALE_PLANS_REJECTED)
    return run


def require_fresh_upstream(store: LedgerPort, ledger: Ledger, snapshot: SourceSnapshot, manifests: ManifestReader,
                           statuses: EvidenceStatuses, stage: Stage, execution: str | None, max_replans: int,
                           metrics: MetricSink) -> None:
    """Every stage before `stage` must be complete with valid evidence (`statuses`, evaluated
    against `snapshot` by the caller)."""
    upstream = stages_before(ledger, stage)
    missing = [s for s in upstream if not is_stage_valid(ledger, s, statuses)]
    if not missing:
        return
    assessment = assess(ledger, snapshot, max_replans, manifests, statuses)
    invalidate(store, ledger, assessment, execution, metrics)
    raise StaleContextError(f"{stage} refused: {missing[0]} is not valid ({assessment.reason})")


def review_still_holds(ledger: Ledger, statuses: EvidenceStatuses) -> bool:
    """Everything the pending review looks at (inspect through verify) is complete and valid."""
    return all(is_stage_valid(ledger, stage, statuses) for stage in WORK_STAGES[: WORK_STAGES.index(Stage.AWAIT_REVIEW)])
