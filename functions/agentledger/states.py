"""The closed sets of names a run moves through. Plain enums with no other import, so the CLI
and the stack can name stages and statuses without loading pydantic or the AWS SDK."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Stage(StrEnum):
    INSPECT = "inspect"
    PLAN = "plan"
    EXECUTE = "execute"
    VERIFY = "verify"
    AWAIT_REVIEW = "await_review"
    COMPLETE = "complete"


WORK_STAGES: tuple[Stage, ...] = tuple(Stage)
# The stages that start test builds: execute writes and filters tests, verify runs the suite.
BUILD_STAGES: tuple[Stage, ...] = (Stage.EXECUTE, Stage.VERIFY)


@dataclass(frozen=True)
class EffectSpec:
    receiver: str  # "tickets" | "pull_requests" | "notifications"
    stage: Stage  # the stage the effect belongs to (and whose crash points it reaches)
    links: tuple[str, ...] = ()  # effects it links to, which are written before it


# Every external write a run makes, in the order it makes them.
EFFECTS: dict[str, EffectSpec] = {
    "review_notification": EffectSpec("notifications", Stage.AWAIT_REVIEW),
    "pull_request": EffectSpec("pull_requests", Stage.COMPLETE),
    "ticket": EffectSpec("tickets", Stage.COMPLETE, links=("pull_request",)),
    "completion_notification": EffectSpec("notifications", Stage.COMPLETE, links=("pull_request", "ticket")),
}


# Where a run is: a stage, or one of the states around the stages. The stages are spelled out
# again so a type checker sees the members; tests/unit/test_transitions.py checks they are Stage's.
class RunState(StrEnum):
    CREATED = "created"
    INSPECT = "inspect"
    PLAN = "plan"
    EXECUTE = "execute"
    VERIFY = "verify"
    AWAIT_REVIEW = "await_review"
    COMPLETE = "complete"
    NEEDS_PERSON = "needs_person"
    CANCELLED = "cancelled"


class RunStatus(StrEnum):
    RUNNING = "running"
    AWAITING_REVIEW = "awaiting_review"
    COMPLETE = "complete"
    NEEDS_PERSON = "needs_person"
    CANCELLED = "cancelled"  # stopped by a person for good: no stage runs again, no effect is written


class RunOutcome(StrEnum):
    """What a run came to, decided by its plan (and by what the execute stage's filters kept)."""

    CHANGES_PROPOSED = "changes_proposed"
    NOTHING_TO_DO = "nothing_to_do"  # the plan writes nothing: no review, no ticket, no pull request
    EMPTY_PLAN_REVIEWED = "empty_plan_reviewed"  # it writes nothing, and the deployment asks a person anyway
    # No candidate passed the filters: the reviewer still sees the funnel and the findings, and no
    # pull request is opened.
    NO_TESTS_KEPT = "no_tests_kept"


class StageStatus(StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    INVALIDATED = "invalidated"


class EffectStatus(StrEnum):
    INTENDED = "intended"
    ATTEMPTED = "attempted"
    CONFIRMED = "confirmed"
    UNCONFIRMED = "unconfirmed"  # sent, but no answer: re-check, never blindly resend
    FAILED = "failed"  # the receiver answered with an error: look, then it is safe to send again


class BuildStatus(StrEnum):
    """A test build's status, in CodeBuild's words."""

    IN_PROGRESS = "IN_PROGRESS"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    FAULT = "FAULT"
    TIMED_OUT = "TIMED_OUT"
    STOPPED = "STOPPED"


class EvidenceState(StrEnum):
    VALID = "valid"
    STALE = "stale"
    MISSING = "missing"
    UNKNOWN = "unknown"  # the source could not be read to check it


class DecisionKind(StrEnum):
    CREATED = "created"
    ASSESSMENT = "assessment"
    RECOVERY = "recovery"
    HANDOFF = "handoff"
    REVIEW = "review"
    RESUME = "resume"
    STALE_PLAN_REJECTED = "stale_plan_rejected"
    STALE_CONTEXT = "stale_context"
    SUPERSEDED = "superseded"
    EFFECT_SKIPPED = "effect_skipped"
    REVIEW_REFUSED = "review_refused"
    REPLAN_UNCHANGED = "replan_unchanged"
    RATE_LIMITED = "rate_limited"  # a receiver asked to wait: the wait chosen, or why a person resumes instead
    CANCELLED = "cancelled"  # who cancelled the run, why, and the execution and builds it stopped


class Verdict(StrEnum):
    """A review's decision."""

    APPROVE = "approve"
    REQUEST_CHANGES = "request_changes"


class FailureKind(StrEnum):
    """What the restart policy makes of a failure."""

    RETRYABLE = "retryable"
    STALE_CONTEXT = "stale_context"
    NEEDS_PERSON = "needs_person"
    SUPERSEDED = "superseded"


class RecoveryAction(StrEnum):
    """What the state machine does after a classified failure (its Choice matches these)."""

    REPLAN = "replan"
    HANDOFF = "handoff"
    ABANDON = "abandon"
    DONE = "done"


# What a restart assessment says is safe next: a stage, nothing (done), or a person. The state
# machine's "Route to next stage" Choice matches these values. The stages are Stage's (checked in
# tests/unit/test_transitions.py).
class NextAction(StrEnum):
    INSPECT = "inspect"
    PLAN = "plan"
    EXECUTE = "execute"
    VERIFY = "verify"
    AWAIT_REVIEW = "await_review"
    COMPLETE = "complete"
    DONE = "done"
    NEEDS_PERSON = "needs_person"
