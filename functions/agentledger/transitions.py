"""The one table of allowed moves between run states."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import IllegalTransitionError
from .models import Record, Run, RunStatus, Transition, utc_now
from .models import RunState as S

if TYPE_CHECKING:
    from collections.abc import Sequence

_RESUMABLE_TARGETS = frozenset({S.INSPECT, S.PLAN, S.EXECUTE, S.VERIFY, S.AWAIT_REVIEW, S.COMPLETE})
_STOPS = frozenset({S.NEEDS_PERSON, S.CANCELLED})

ALLOWED_TRANSITIONS: dict[S, frozenset[S]] = {
    S.CREATED: frozenset({S.INSPECT}) | _STOPS,
    S.INSPECT: frozenset({S.PLAN}) | _STOPS,
    # Back-edges go to inspect (the source changed) or plan (a reviewer asked for changes). A plan
    # that writes nothing goes straight to complete.
    S.PLAN: frozenset({S.EXECUTE, S.INSPECT, S.COMPLETE}) | _STOPS,
    S.EXECUTE: frozenset({S.VERIFY, S.PLAN, S.INSPECT}) | _STOPS,
    S.VERIFY: frozenset({S.AWAIT_REVIEW, S.PLAN, S.INSPECT}) | _STOPS,
    S.AWAIT_REVIEW: frozenset({S.COMPLETE, S.PLAN, S.INSPECT}) | _STOPS,
    # Once its effects are being written, a run finishes or waits for a person; it is not cancelled.
    S.COMPLETE: frozenset({S.NEEDS_PERSON}),
    # A person (resume) may send a stopped run back to the stage the assessment chose, or cancel it.
    S.NEEDS_PERSON: _RESUMABLE_TARGETS | {S.CANCELLED},
    S.CANCELLED: frozenset(),
}


def check_transition(current: S, target: S) -> None:
    if target not in ALLOWED_TRANSITIONS[current]:
        allowed = ", ".join(sorted(ALLOWED_TRANSITIONS[current])) or "nothing"
        raise IllegalTransitionError(f"cannot move a run from {current} to {target}; allowed: {allowed}")


def next_version(run: Run, *, reason: str, execution: str | None, to_state: S | None,
                 status: RunStatus | None, changes: dict[str, Any] | None,
                 records: Sequence[Record]) -> tuple[Run, list[Record]]:
    """The run one version on and the records to commit with it. A state change must be allowed by
    the transition table and leaves a Transition record."""
    updated = run.model_copy(update={**(changes or {}), "version": run.version + 1, "updated_at": utc_now()})
    records = list(records)
    if to_state is not None and to_state != run.state:
        check_transition(run.state, to_state)
        updated.state = to_state
        records.append(Transition(version=updated.version, from_state=run.state, to_state=to_state,
                                  execution=execution, reason=reason))
    if status is not None:
        updated.status = status
    return updated, records
