"""The records of a run's ledger and how each is keyed: one mapping that every store (DynamoDB,
the in-memory fakes) writes and loads by, and the constructors of the records the core writes.

A deploy replaces the functions while runs wait for review or for a person, so every stored item
carries the schema version of its record's shape, and is read through `read_run` or `read_ledger`:
an item an earlier release wrote is upgraded to this release's shape before it is validated, and
one a later release wrote is refused rather than misread."""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import RecordSchemaError, RunNotFoundError
from .models import (
    ArtifactRef,
    Decision,
    DecisionKind,
    Effect,
    Evidence,
    Ledger,
    Record,
    Review,
    Run,
    RunState,
    StageRecord,
    TestRun,
    Transition,
    utc_now,
)

RUN_SK = "RUN"
REVIEW_SK = "REVIEW"
SCHEMA_VERSION = "schema_version"
# Items written before records carried a version (up to 3040a7c) have the shapes of version 1.
UNVERSIONED = 1
# A change to a record's shape bumps its kind's version (this one, or the RecordKind's below),
# registers the upgrade from the version before in UPGRADES, and records a fixture
# (tests/fixtures/ledgers/record.py) that tests/unit/test_record_upgrades.py carries through.
RUN_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RecordKind:
    """How one kind of record is keyed in the run's item collection and where it goes in a Ledger."""

    model: type[Record]
    prefix: str
    key: Callable[[Any], str]
    place: Callable[[Ledger, Any], None]
    schema_version: int  # of the shape this release writes


# The one record <-> key mapping: writing uses `key`, loading uses `prefix` and `place`.
RECORD_KINDS: tuple[RecordKind, ...] = (
    RecordKind(StageRecord, "STAGE", lambda r: f"STAGE#{r.stage}",
               lambda ledger, r: ledger.stages.__setitem__(r.stage.value, r), 1),
    RecordKind(Evidence, "EVIDENCE", lambda r: f"EVIDENCE#{r.name}",
               lambda ledger, r: ledger.evidence.__setitem__(r.name, r), 1),
    RecordKind(ArtifactRef, "ARTIFACT", lambda r: f"ARTIFACT#{r.stage}#{r.name}#{r.sha256[:16]}",
               lambda ledger, r: ledger.artifacts.append(r), 1),
    RecordKind(Transition, "TRANSITION", lambda r: f"TRANSITION#{r.version:08d}",
               lambda ledger, r: ledger.transitions.append(r), 1),
    RecordKind(Decision, "DECISION", lambda r: f"DECISION#{r.decision_id}",
               lambda ledger, r: ledger.decisions.append(r), 1),
    RecordKind(Review, REVIEW_SK, lambda r: REVIEW_SK, lambda ledger, r: setattr(ledger, "review", r), 1),
    RecordKind(Effect, "EFFECT", lambda r: f"EFFECT#{r.key}",
               lambda ledger, r: ledger.effects.__setitem__(r.key, r), 1),
    RecordKind(TestRun, "TESTRUN", lambda r: f"TESTRUN#{r.digest}",
               lambda ledger, r: ledger.test_runs.__setitem__(r.digest, r), 2),
)
KIND_BY_MODEL = {kind.model: kind for kind in RECORD_KINDS}
KIND_BY_PREFIX = {kind.prefix: kind for kind in RECORD_KINDS}

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
# (prefix of the kind, version) -> what turns a stored item of that version into the next one's shape.
UPGRADES: dict[tuple[str, int], Upgrade] = {
    # Version 2 names the stage a build is for; every build of version 1 was verify's.
    ("TESTRUN", 1): lambda item: {**item, "stage": "verify"},
}


def new_decision(kind: DecisionKind, summary: str, details: dict[str, Any], execution: str | None = None,
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


def run_pk(run_id: str) -> str:
    return f"RUN#{run_id}"


def stored_item(run_id: str, record: Record) -> dict[str, Any]:
    """A record as a store keeps it: its fields in JSON form, its keys and its shape's version."""
    if isinstance(record, Run):
        sk, version = RUN_SK, RUN_SCHEMA_VERSION
    else:
        sk, version = record_key(record), KIND_BY_MODEL[type(record)].schema_version
    return {**record.model_dump(mode="json"), "pk": run_pk(run_id), "sk": sk, SCHEMA_VERSION: version}


def upgraded(prefix: str, current: int, item: dict[str, Any]) -> dict[str, Any]:
    """The stored item in the shape of version `current` of its kind."""
    version = item.get(SCHEMA_VERSION, UNVERSIONED)
    if not isinstance(version, int) or version > current:
        raise RecordSchemaError(
            f"{item.get('pk')} {item.get('sk')} has schema version {version!r}, and this release reads {prefix} "
            f"records up to version {current}: a later release wrote it, so deploy that release again to read it")
    while version < current:
        item = {**UPGRADES[(prefix, version)](item), SCHEMA_VERSION: version + 1}
        version += 1
    return item


def read_run(item: dict[str, Any]) -> Run:
    return Run.model_validate(upgraded(RUN_SK, RUN_SCHEMA_VERSION, item))


def read_ledger(run_id: str, items: Iterable[dict[str, Any]]) -> Ledger:
    """A run's ledger from every item of its collection, each upgraded to this release's shape.
    An item of a kind this release does not know is left out, as it always was."""
    ordered = sorted(items, key=lambda item: item["sk"])
    run = next((item for item in ordered if item["sk"] == RUN_SK), None)
    if run is None:
        raise RunNotFoundError(f"no run with id {run_id!r}")
    ledger = Ledger(run=read_run(run))
    for item in ordered:
        kind = KIND_BY_PREFIX.get(item["sk"].split("#", 1)[0])
        if kind is not None:
            place_record(ledger, kind.model.model_validate(upgraded(kind.prefix, kind.schema_version, item)))
    ledger.artifacts.sort(key=lambda a: a.created_at)
    return ledger
