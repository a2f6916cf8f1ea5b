"""The one list of metric names, shared by the handlers that emit them and the stack's
dashboard and alarms (so a renamed metric cannot leave an alarm watching nothing)."""
from __future__ import annotations

NAMESPACE = "AgentLedger"

RUNS_STARTED = "RunsStarted"
RUNS_RESUMED = "RunsResumed"
RUNS_CANCELLED = "RunsCancelled"
RUNS_RECOVERED = "RunsRecovered"  # completed after at least one resume
RUNS_HANDED_OFF = "RunsHandedOff"
DUPLICATED_SIDE_EFFECTS = "DuplicatedSideEffects"  # the receiver holds more than one record for one key
DUPLICATES_SUPPRESSED = "DuplicatesSuppressed"  # a retry found its write already at the receiver
STALE_PLANS_REJECTED = "StalePlansRejected"
TIME_TO_HANDOFF = "TimeToHandoff"  # seconds from the failure to the handoff record
STAGE_DURATION = "StageDuration"  # seconds, dimension Stage
REVIEW_WAIT = "ReviewWait"  # seconds from review request to decision
OLDEST_PENDING_REVIEW = "OldestPendingReviewAge"  # seconds, emitted by the review keeper
EFFECTS_CONFIRMED = "EffectsConfirmed"
EFFECTS_UNCONFIRMED = "EffectsUnconfirmed"
RECEIVER_RATE_LIMITED = "ReceiverRateLimited"  # a receiver (GitHub) answered a rate limit; the run waits it out
RECEIVER_PACED = "ReceiverPaced"  # a write held back by the token's write budget before it was sent
MODEL_CALLS = "ModelCalls"  # calls a model-backed planner made
MODEL_INPUT_TOKENS = "ModelInputTokens"
MODEL_OUTPUT_TOKENS = "ModelOutputTokens"
MODEL_LATENCY = "ModelLatency"  # seconds per call
MODEL_COST = "ModelEstimatedCostUSD"  # from the price table in configuration
# The execute stage's funnel: candidates written, those past each filter, those kept, and the
# points of line coverage the kept ones add to the targeted modules.
CANDIDATES_GENERATED = "CandidatesGenerated"
CANDIDATES_KEPT = "CandidatesKept"
CANDIDATES_PAST_FILTER = {
    "build": "CandidatesBuilt",
    "pass_alone": "CandidatesPassedAlone",
    "pass_with_suite": "CandidatesPassedWithSuite",
    "coverage": "CandidatesAddedCoverage",
    "mutation": "CandidatesKilledMutant",
}
COVERAGE_GAINED = "CoverageGained"
# Mutants of the targeted modules the kept tests kill and the suite did not, and the points of
# mutation score they add.
MUTANTS_KILLED = "MutantsKilled"
MUTATION_SCORE_GAINED = "MutationScoreGained"
WRITER_FAILURES = "WriterFailures"  # modules a writer wrote no test for: it crashed, timed out or wrote nothing
THROTTLED = "Throttled"  # AWS refused a call because a quota bound (the call is retried), dimension AwsService

STAGE_DIMENSION = "Stage"
# The AWS service as botocore names it (dynamodb, sfn, codebuild...); Powertools' own "service"
# dimension names the function's service.
AWS_SERVICE_DIMENSION = "AwsService"
