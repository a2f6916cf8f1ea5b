"""Freshness on entry: before anything acts, every piece of evidence it builds on must still
match the world; stale evidence is invalidated (once, with what changed) and the action refused.
Whatever enters a run (a stage, an effect, the assessment, the review keeper, the API) judges
it by one ritual, `Entrance.enter`, and acts on the `EntryContext` it returns."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from agentledger.records import new_decision
from agentledger.source import SourceSnapshot

from . import metric_names
from .errors import ConcurrentModificationError, StaleContextError
from .evidence import EVIDENCE_OF, stages_before
from .models import WORK_STAGES, Assessment, Ledger, Record, Run, Stage, StageStatus
from .restart import EvidenceStatuses, ManifestReader, assess, evaluate_evidence, is_stage_valid
from .states import DecisionKind, EvidenceState

if TYPE_CHECKING:
    from .ports import LedgerPort, MetricSink, SourcePort

# Reads the run's repository as it is now; a caller passes its own to say why it cannot be read.
SourceReader = Callable[[Run], SourceSnapshot]


@dataclass(frozen=True)
class EntryContext:
    """What an action on a run stands on: the ledger as loaded, the repository as it is now, and
    every piece of evidence judged against it (evaluated once per entry)."""

    ledger: Ledger
    snapshot: SourceSnapshot
    statuses: EvidenceStatuses
    manifests: ManifestReader = field(repr=False, compare=False)
    max_replans: int = field(repr=False, compare=False)

    @cached_property
    def assessment(self) -> Assessment:
        """What a restart would do now. Made when first asked, since most entries find their
        evidence valid and never need it."""
        return assess(self.ledger, self.snapshot, self.max_replans, self.manifests, self.statuses)

    def holds(self, stage: Stage) -> bool:
        """`stage` is complete and its evidence still valid."""
        return is_stage_valid(self.ledger, stage, self.statuses)


@dataclass(frozen=True)
class Entrance:
    """What the entry ritual reads besides the ledger: the repositories, the manifests of the
    files the stages read, and the replan budget an assessment weighs."""

    sources: SourcePort
    manifests: ManifestReader
    max_replans: int

    def enter(self, ledger: Ledger, read: SourceReader | None = None) -> EntryContext:
        """The entry ritual: the run's repository as it is now, and its evidence judged against it."""
        snapshot = read(ledger.run) if read is not None else self.sources.snapshot(ledger.run.repository)
        statuses = evaluate_evidence(ledger, snapshot, self.manifests)
        return EntryContext(ledger, snapshot, statuses, self.manifests, self.max_replans)


def invalidate(store: LedgerPort, entry: EntryContext, execution: str | None, metrics: MetricSink) -> Run:
    """Mark stale stages (and everything after them) invalid, recording what changed. Once a
    stage is invalidated it is no longer complete, so the same staleness is recorded once."""
    ledger, assessment = entry.ledger, entry.assessment
    if not assessment.invalidated:
        return ledger.run
    records: list[Record] = [
        ledger.stages[stage.value].model_copy(update={"status": StageStatus.INVALIDATED})
        for stage in assessment.invalidated
    ]
    stale = [e.model_dump(mode="json") for e in assessment.evidence if e.status == EvidenceState.STALE]
    plan_rejected = Stage.PLAN in assessment.invalidated and any(e["name"] == EVIDENCE_OF[Stage.PLAN]
                                                                 for e in stale)
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


def require_fresh_upstream(store: LedgerPort, entry: EntryContext, stage: Stage, execution: str | None,
                           metrics: MetricSink) -> None:
    """Every stage before `stage` must be complete with valid evidence."""
    missing = [s for s in stages_before(entry.ledger, stage) if not entry.holds(s)]
    if not missing:
        return
    invalidate(store, entry, execution, metrics)
    raise StaleContextError(f"{stage} refused: {missing[0]} is not valid ({entry.assessment.reason})")


def review_still_holds(entry: EntryContext) -> bool:
    """Everything the pending review looks at (inspect through verify) is complete and valid."""
    return all(entry.holds(stage) for stage in WORK_STAGES[: WORK_STAGES.index(Stage.AWAIT_REVIEW)])
