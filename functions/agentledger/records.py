"""The records of a run's ledger and how each is keyed: one mapping that every store (DynamoDB,
the in-memory fakes) writes and loads by, and the constructors of the records the core writes."""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .models import (
    ArtifactRef,
    Decision,
    Effect,
    Evidence,
    Ledger,
    Record,
    Review,
    RunState,
    StageRecord,
    TestRun,
    Transition,
    utc_now,
)

RUN_SK = "RUN"
REVIEW_SK = "REVIEW"


@dataclass(frozen=True)
class RecordKind:
    """How one kind of record is keyed in the run's item collection and where it goes in a Ledger."""

    model: type[Record]
    prefix: str
    key: Callable[[Any], str]
    place: Callable[[Ledger, Any], None]


# The one record <-> key mapping: writing uses `key`, loading uses `prefix` and `place`.
RECORD_KINDS: tuple[RecordKind, ...] = (
    RecordKind(StageRecord, "STAGE", lambda r: f"STAGE#{r.stage}",
               lambda ledger, r: ledger.stages.__setitem__(r.stage.value, r)),
    RecordKind(Evidence, "EVIDENCE", lambda r: f"EVIDENCE#{r.name}",
               lambda ledger, r: ledger.evidence.__setitem__(r.name, r)),
    RecordKind(ArtifactRef, "ARTIFACT", lambda r: f"ARTIFACT#{r.stage}#{r.name}#{r.sha256[:16]}",
               lambda ledger, r: ledger.artifacts.append(r)),
    RecordKind(Transition, "TRANSITION", lambda r: f"TRANSITION#{r.version:08d}",
               lambda ledger, r: ledger.transitions.append(r)),
    RecordKind(Decision, "DECISION", lambda r: f"DECISION#{r.decision_id}",
               lambda ledger, r: ledger.decisions.append(r)),
    RecordKind(Review, REVIEW_SK, lambda r: REVIEW_SK, lambda ledger, r: setattr(ledger, "review", r)),
    RecordKind(Effect, "EFFECT", lambda r: f"EFFECT#{r.key}", lambda ledger, r: ledger.effects.__setitem__(r.key, r)),
    RecordKind(TestRun, "TESTRUN", lambda r: f"TESTRUN#{r.digest}",
               lambda ledger, r: ledger.test_runs.__setitem__(r.digest, r)),
)
KIND_BY_MODEL = {kind.model: kind for kind in RECORD_KINDS}
KIND_BY_PREFIX = {kind.prefix: kind for kind in RECORD_KINDS}



def new_decision(kind: str, summary: str, details: dict[str, Any], execution: str | None = None,
                 actor: str | None = None) -> Decision:
    return Decision(
        decision_id=f"{utc_now()}#{uuid.uuid4().hex[:8]}",
        kind=kind,
        summary=summary,
        details=details,
        execution=execution,
        actor=actor,
    )


def created_transition() -> Transition:
    return Transition(version=0, from_state=RunState.CREATED, to_state=RunState.CREATED, reason="run created")


def record_key(record: Record) -> str:
    kind = KIND_BY_MODEL.get(type(record))
    if kind is None:
        raise TypeError(f"no ledger key for {type(record).__name__}")
    return kind.key(record)


def place_record(ledger: Ledger, record: Record) -> None:
    KIND_BY_MODEL[type(record)].place(ledger, record)
