"""The one table of allowed moves between run states."""
from __future__ import annotations

from .errors import IllegalTransitionError
from .models import RunState as S

_RESUMABLE_TARGETS = frozenset({S.INSPECT, S.PLAN, S.EXECUTE, S.VERIFY, S.AWAIT_REVIEW, S.COMPLETE})
_STOPS = frozenset({S.NEEDS_PERSON})

ALLOWED_TRANSITIONS: dict[S, frozenset[S]] = {
    S.CREATED: frozenset({S.INSPECT}) | _STOPS,
    S.INSPECT: frozenset({S.PLAN}) | _STOPS,
    # Back-edges go to inspect (the source changed) or plan (a reviewer asked for changes). A plan
    # that writes nothing goes straight to complete.
    S.PLAN: frozenset({S.EXECUTE, S.INSPECT, S.COMPLETE}) | _STOPS,
    S.EXECUTE: frozenset({S.VERIFY, S.PLAN, S.INSPECT}) | _STOPS,
    S.VERIFY: frozenset({S.AWAIT_REVIEW, S.PLAN, S.INSPECT}) | _STOPS,
    S.AWAIT_REVIEW: frozenset({S.COMPLETE, S.PLAN, S.INSPECT}) | _STOPS,
    S.COMPLETE: _STOPS,
    # A person (resume) may send a stopped run back to the stage the assessment chose.
    S.NEEDS_PERSON: _RESUMABLE_TARGETS,
}


def check_transition(current: S, target: S) -> None:
    if target not in ALLOWED_TRANSITIONS[current]:
        allowed = ", ".join(sorted(ALLOWED_TRANSITIONS[current])) or "nothing"
        raise IllegalTransitionError(f"cannot move a run from {current} to {target}; allowed: {allowed}")
