"""The records the ledger keeps. Every record is a pydantic model so what is stored, returned by
the API and passed between stages is validated in one place."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .buildkit.layout import PROGRESS_FILE
from .states import (
    WORK_STAGES,
    BuildStatus,
    DecisionKind,
    EffectStatus,
    EvidenceState,
    NextAction,
    RunOutcome,
    RunState,
    RunStatus,
    Stage,
    StageStatus,
    Verdict,
)

__all__ = ["WORK_STAGES", "EffectStatus", "NextAction", "RunOutcome", "RunState", "RunStatus", "Stage", "StageStatus"]


MAX_BUILD_FAILURE_CHARS = 1000


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def seconds_between(start: str, end: str) -> float:
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())


class Record(BaseModel):
    model_config = ConfigDict(extra="ignore", use_enum_values=False)


class Run(Record):
    run_id: str
    request: str
    repository: str
    revision: str | None = None
    environment: str
    requested_by: str | None = None  # the caller's principal ARN, as the API's authorization proved it
    state: RunState = RunState.CREATED
    status: RunStatus = RunStatus.RUNNING
    version: int = 0
    active_execution: str | None = None
    executions: list[str] = Field(default_factory=list)
    plan_digest: str | None = None
    outcome: RunOutcome | None = None  # decided by the plan
    replans: int = 0
    resumes: int = 0
    created_at: str = Field(default_factory=utc_now)
    updated_at: str = Field(default_factory=utc_now)


class ArtifactRef(Record):
    name: str
    stage: Stage
    key: str
    sha256: str
    size: int
    media_type: str
    created_at: str = Field(default_factory=utc_now)


class StageRecord(Record):
    stage: Stage
    status: StageStatus
    attempt: int = 0
    execution: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    inputs: dict[str, str] = Field(default_factory=dict)
    outputs: list[str] = Field(default_factory=list)
    error: str | None = None


class Evidence(Record):
    """A named fact with a fingerprint and what it depends on: `file:PATH` → sha256,
    `revision` → the revision read, `evidence:NAME` → the fingerprint of upstream evidence."""

    name: str
    stage: Stage
    fingerprint: str
    depends_on: dict[str, str] = Field(default_factory=dict)
    recorded_at: str = Field(default_factory=utc_now)


class Transition(Record):
    version: int
    from_state: RunState
    to_state: RunState
    execution: str | None = None
    reason: str
    at: str = Field(default_factory=utc_now)


class Decision(Record):
    """A restart assessment, a recovery choice or a review decision, with its reasons."""

    decision_id: str
    kind: DecisionKind
    summary: str
    details: dict[str, Any] = Field(default_factory=dict)
    execution: str | None = None
    actor: str | None = None  # the principal whose request this was; None when the workflow decided
    at: str = Field(default_factory=utc_now)


class ChangeRequest(Record):
    """A reviewer's request for changes, as the next review shows it."""

    plan_digest: str
    comment: str | None = None
    decided_by: str | None = None
    decided_at: str | None = None


class ReviewView(Record):
    """A run's review as the API shows it: everything but the task token, with which only the
    workflow answers the waiting execution."""

    plan_digest: str
    revision: str
    execution: str
    requested_at: str = Field(default_factory=utc_now)
    decision: Verdict | None = None
    decided_at: str | None = None
    decided_by: str | None = None
    comment: str | None = None
    # A reviewer asked for changes to this very plan, and the planner made it again.
    unchanged_after: ChangeRequest | None = None


class Review(ReviewView):
    """The pending review of a run: the task token binds the approval to one plan and revision."""

    task_token: str


class TestRun(Record):
    """One build of one set of test-run inputs (source tree, test files, configuration), keyed by
    their digest: a retry or a resume finds it and waits for it instead of starting another."""

    __test__ = False  # not a pytest class
    digest: str
    # The stage whose build it is: verify runs the suite, execute writes and filters candidate
    # tests (records of release 1 were all verify's).
    stage: Stage = Stage.VERIFY
    attempt: int = 1  # a person's resume after reported results builds the same inputs again
    status: BuildStatus = BuildStatus.IN_PROGRESS
    build_id: str | None = None  # None between recording the intent and CodeBuild's answer
    input: ArtifactRef  # the tarball the build fetches
    output_key: str  # where the build uploads its results (not content-addressed: written by the build)
    execution: str | None = None
    created_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None
    # Why the build service says the build failed (its failed phase and the reason), once it ended.
    failure: str | None = Field(default=None, max_length=MAX_BUILD_FAILURE_CHARS)
    report: dict[str, Any] | None = None  # command.json once the results were read: outcome, reason, counts

    @property
    def progress_key(self) -> str:
        """Where a generation build posts its progress while it runs: beside its output."""
        return f"{self.output_key.rpartition('/')[0]}/{PROGRESS_FILE}"

    def marker(self, run_id: str) -> str:
        """What the build carries as AGENTLEDGER_TEST_RUN, to be found again: "<run id>/<digest>#<attempt>"
        for the suite (as release 1 wrote it), "<run id>/execute/<digest>#<attempt>" for test writing."""
        stage = "" if self.stage == Stage.VERIFY else f"{self.stage.value}/"
        return f"{run_id}/{stage}{self.digest}#{self.attempt}"


class BuildRequest(Record):
    """What a test build is started with. The URLs grant exactly this test run's input and output."""

    test_run: str  # "<run id>/<input digest>"
    input_url: str
    output_grant: dict[str, Any]
    image: str
    compute: str
    timeout_minutes: int
    # The dependency cache entry it may use or fill (workflow/builds.py: cache_key); None: none.
    cache_key: str | None = None


class Effect(Record):
    """An external write (ticket, notification) and everything known about its delivery."""

    key: str
    kind: str
    stage: Stage
    receiver: str
    status: EffectStatus
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    receiver_id: str | None = None
    receiver_url: str | None = None
    attempts: int = 0
    rechecks: int = 0
    duplicates_suppressed: int = 0
    receiver_copies: int | None = None
    execution: str | None = None
    error: str | None = None
    created_at: str = Field(default_factory=utc_now)
    attempted_at: str | None = None
    confirmed_at: str | None = None


class EvidenceStatus(Record):
    name: str
    status: EvidenceState
    reason: str


class EffectSummary(Record):
    key: str
    kind: str
    status: EffectStatus
    receiver_id: str | None = None
    attempts: int = 0
    error: str | None = None


class HandoffAttempt(Record):
    stage: Stage | None
    attempt: int
    execution: str
    operation: str
    started_at: str | None = None


class HandoffResponse(Record):
    error: str
    message: str
    cause: dict[str, Any] = Field(default_factory=dict)


class PartialEffect(Record):
    complete_stages: list[Stage]
    uncommitted_artifacts: list[str]
    external_effects: list[EffectSummary]


class Handoff(Record):
    """What a person needs to pick up a run: what was attempted, what came back, the scope of any
    partial effect, and the recovery path. Kept as the details of a handoff decision."""

    kind: str  # a FailureKind, or the assessment's reason kind
    attempted: HandoffAttempt
    response: HandoffResponse
    partial_effect: PartialEffect
    recovery: str
    failed_at: str
    handoff_at: str


class Assessment(Record):
    """The three answers every restart gives: what is complete, what evidence still holds,
    what is safe next."""

    complete: list[Stage]
    evidence: list[EvidenceStatus]
    next: NextAction
    reason: str
    invalidated: list[Stage] = Field(default_factory=list)
    changed_files: dict[str, list[str]] = Field(default_factory=dict)  # the first paths of each kind
    changed_file_counts: dict[str, int] = Field(default_factory=dict)


class Ledger(Record):
    """Everything recorded about one run."""

    run: Run
    stages: dict[str, StageRecord] = Field(default_factory=dict)
    evidence: dict[str, Evidence] = Field(default_factory=dict)
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    transitions: list[Transition] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    effects: dict[str, Effect] = Field(default_factory=dict)
    test_runs: dict[str, TestRun] = Field(default_factory=dict)
    review: Review | None = None

    def committed_keys(self) -> set[str]:
        """The artifact keys some stage committed as its outputs."""
        return {key for record in self.stages.values() for key in record.outputs}

    def confirmed(self, kind: str) -> Effect | None:
        """The newest confirmed effect of that kind."""
        found = [effect for effect in self.effects.values()
                 if effect.kind == kind and effect.status == EffectStatus.CONFIRMED]
        return found[-1] if found else None

    def latest_test_run(self, stage: Stage = Stage.VERIFY) -> TestRun | None:
        """The newest build of `stage` (verify's run the suite; execute's write the tests)."""
        return max((test_run for test_run in self.test_runs.values() if test_run.stage == stage),
                   key=lambda test_run: test_run.created_at, default=None)
