"""The restart policy: which evidence still holds, what a restart does next, and how each
failure is classified. Pure functions over a Ledger and a source snapshot, so every rule is
unit-tested without AWS."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentledger.source import SourceSnapshot, changed_files, named_changes

from .agent import PlannerOutputError
from .errors import (
    BuildQueueTimeoutError,
    ConcurrentModificationError,
    EffectFailedError,
    EffectInProgressError,
    EffectRateLimitedError,
    EffectRejectedError,
    EffectUnconfirmedError,
    GenerationFailedError,
    HiddenTextError,
    NoTestsRanError,
    RepositoryNotAllowedError,
    StaleContextError,
    SupersededExecutionError,
    TestConfigurationError,
    TransientError,
    VerificationFailedError,
)
from .evidence import EVIDENCE_GRAPH, EVIDENCE_OF, MANIFEST, TREE, UPSTREAM_PREFIX, manifest_ref, stages_of
from .models import WORK_STAGES, ArtifactRef, Assessment, EvidenceStatus, Ledger, Stage, StageStatus
from .states import EvidenceState, FailureKind, NextAction, RecoveryAction

VALID, STALE, MISSING = EvidenceState.VALID, EvidenceState.STALE, EvidenceState.MISSING
EvidenceStatuses = dict[str, EvidenceStatus]
# Reads a manifest artifact (path -> sha256); None when it is gone or does not match its hash.
ManifestReader = Callable[[ArtifactRef], "dict[str, str] | None"]
# How many changed paths of each kind an assessment names; the counts say how many there were.
MAX_NAMED_CHANGES = 50


class _ManifestUnavailable(Exception):
    pass


def evaluate_evidence(ledger: Ledger, snapshot: SourceSnapshot, manifests: ManifestReader) -> dict[str, EvidenceStatus]:
    """Evidence is valid while every dependency still matches the world; in stage order, so a
    stale upstream makes everything that depends on it stale too."""
    statuses: dict[str, EvidenceStatus] = {}
    for stage in WORK_STAGES:
        name = EVIDENCE_OF[stage]
        evidence = ledger.evidence.get(name)
        if evidence is None:
            statuses[name] = EvidenceStatus(name=name, status=MISSING, reason=f"{stage} has not recorded it")
            continue
        problems = _broken_dependencies(evidence.depends_on, ledger, snapshot, statuses, manifests,
                                        EVIDENCE_GRAPH[stage].reads_whole_tree)
        if problems:
            statuses[name] = EvidenceStatus(name=name, status=STALE, reason="; ".join(problems))
        else:
            statuses[name] = EvidenceStatus(name=name, status=VALID, reason="every dependency still matches")
    return statuses


def changed_reads(depends_on: dict[str, str], ledger: Ledger, snapshot: SourceSnapshot, manifests: ManifestReader,
                  whole_tree: bool) -> dict[str, list[str]]:
    """The files read (as `depends_on` records them) that differ in `snapshot`. Cheap when the
    tree is the one they were read from: the manifest is only fetched to name what changed."""
    if MANIFEST not in depends_on or depends_on.get(TREE) == snapshot.tree_digest:
        return {}
    ref = manifest_ref(ledger, depends_on)
    recorded = manifests(ref) if ref is not None else None
    if recorded is None:
        raise _ManifestUnavailable(f"the list of files it read ({depends_on[MANIFEST]}) is not available")
    changes = changed_files(recorded, snapshot.files)
    if not whole_tree:
        changes["added"] = []  # only the evidence that read the whole tree cares about new files
    return {kind: paths for kind, paths in changes.items() if paths}


def _broken_dependencies(
    depends_on: dict[str, str], ledger: Ledger, snapshot: SourceSnapshot, statuses: dict[str, EvidenceStatus],
    manifests: ManifestReader, whole_tree: bool,
) -> list[str]:
    problems: list[str] = []
    try:
        changes = changed_reads(depends_on, ledger, snapshot, manifests, whole_tree)
    except _ManifestUnavailable as unavailable:
        problems.append(str(unavailable))
    else:
        if changes:
            problems.append(named_changes(changes))
    if "revision" in depends_on and depends_on["revision"] != snapshot.revision:
        problems.append(f"revision moved from {depends_on['revision']} to {snapshot.revision}")
    for key, fingerprint in sorted(depends_on.items()):
        if not key.startswith(UPSTREAM_PREFIX):
            continue
        upstream = key.removeprefix(UPSTREAM_PREFIX)
        status = statuses.get(upstream)
        if status is None or status.status != VALID:
            problems.append(f"depends on {upstream}, which is {status.status if status else MISSING}")
        elif ledger.evidence[upstream].fingerprint != fingerprint:
            problems.append(f"{upstream} was recorded again since")
    return problems


def is_stage_valid(ledger: Ledger, stage: Stage, statuses: dict[str, EvidenceStatus]) -> bool:
    record = ledger.stages.get(stage.value)
    return (
        record is not None
        and record.status == StageStatus.COMPLETE
        and statuses[EVIDENCE_OF[stage]].status == VALID
    )


def assess(ledger: Ledger, snapshot: SourceSnapshot, max_replans: int, manifests: ManifestReader,
           statuses: EvidenceStatuses | None = None) -> Assessment:
    """`statuses`, when the caller has just evaluated the evidence, saves evaluating it again."""
    statuses = statuses if statuses is not None else evaluate_evidence(ledger, snapshot, manifests)
    complete: list[Stage] = []
    invalidated: list[Stage] = []
    next_stage: Stage | None = None
    for stage in stages_of(ledger):
        if next_stage is None and is_stage_valid(ledger, stage, statuses):
            complete.append(stage)
            continue
        next_stage = next_stage or stage
        record = ledger.stages.get(stage.value)
        if record is not None and record.status == StageStatus.COMPLETE:
            invalidated.append(stage)
    changes = _tree_changes(ledger, snapshot, manifests)
    named = {kind: paths[:MAX_NAMED_CHANGES] for kind, paths in changes.items()}
    counts = {kind: len(paths) for kind, paths in changes.items()}

    if next_stage is None:
        return Assessment(complete=complete, evidence=list(statuses.values()), next=NextAction.DONE,
                          reason="every stage is complete and its evidence still holds")
    stale = [stage for stage in invalidated if statuses[EVIDENCE_OF[stage]].status == STALE]
    if stale and ledger.run.replans >= max_replans:
        return Assessment(
            complete=complete, evidence=list(statuses.values()), next=NextAction.NEEDS_PERSON, invalidated=invalidated,
            changed_files=named, changed_file_counts=counts,
            reason=f"the context went stale again after {ledger.run.replans} replans; a person should look",
        )
    return Assessment(complete=complete, evidence=list(statuses.values()), next=NextAction(next_stage.value),
                      invalidated=invalidated, changed_files=named, changed_file_counts=counts,
                      reason=_next_reason(ledger, statuses, complete, next_stage, stale))


def _tree_changes(ledger: Ledger, snapshot: SourceSnapshot, manifests: ManifestReader) -> dict[str, list[str]]:
    inspected = ledger.evidence.get(EVIDENCE_OF[Stage.INSPECT])
    if inspected is None:
        return {}
    try:
        return changed_reads(inspected.depends_on, ledger, snapshot, manifests, whole_tree=True)
    except _ManifestUnavailable:
        return {}  # the source tree's evidence says so; there is nothing to name


def _next_reason(ledger: Ledger, statuses: dict[str, EvidenceStatus], complete: list[Stage], next_stage: Stage,
                 stale: list[Stage]) -> str:
    if stale:
        return f"{stale[0]} is no longer valid ({statuses[EVIDENCE_OF[stale[0]]].reason}); redo from {next_stage}"
    record = ledger.stages.get(next_stage.value)
    if record is not None and record.status in (StageStatus.INVALIDATED, StageStatus.FAILED):
        detail = f": {record.error}" if record.error else ""
        return f"{next_stage} was {record.status}{detail}; redo from {next_stage}"
    if complete:
        return f"{', '.join(complete)} complete with valid evidence; continue with {next_stage}"
    return "nothing is complete yet; start with inspect"


# -- failure classification ----------------------------------------------------------------
# Errors the state machine retries with backoff before they ever reach the classifier. A
# function that ran out of time (Sandbox.Timedout, or Lambda.Unknown from older runtimes) left
# nothing half-done that the ledger does not know about, so another attempt is safe.
RETRYABLE_ERRORS = frozenset(
    {
        "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException", "Lambda.Unknown", "Sandbox.Timedout", "Runtime.ExitError",
        "States.Timeout",
        *(error.__name__ for error in (TransientError, ConcurrentModificationError, EffectFailedError,
                                       EffectInProgressError)),
    }
)
# The review state's own time limit is a week of nobody answering: asking again would not help.
REVIEW_WAIT_TIMEOUTS = frozenset({"States.Timeout", "States.HeartbeatTimeout"})
# Failures a retry, a replan or a newer execution cannot fix: why a person has to.
WHY_A_PERSON: dict[str, str] = {
    EffectUnconfirmedError.__name__: "an external write was sent but the receiver never confirmed it; "
                                     "check the receiver before resuming",
    EffectRejectedError.__name__: "the receiver refused an external write; fix its configuration",
    EffectRateLimitedError.__name__: "the receiver's rate limit asks for a longer wait than a run spends on it; "
                                     "resume the run once the limit has passed (the error names the wait)",
    BuildQueueTimeoutError.__name__: "no test build could start: the project's builds hold every slot and none "
                                     "has ended for hours; check CodeBuild, stop the stuck builds, then resume",
    VerificationFailedError.__name__: "the test run failed; see test-output.txt and test-results.json",
    GenerationFailedError.__name__: "the build that writes and checks the candidate tests did not finish; "
                                    "see generation-output.txt",
    HiddenTextError.__name__: "the agent wrote a test file with a character a reader does not see (the error "
                              "names it and where), so nothing it wrote was kept",
    NoTestsRanError.__name__: "no test executed, so nothing shows the change works",
    PlannerOutputError.__name__: "the model's plan did not validate after the re-asks; "
                                 "see the plan stage's model calls",
    TestConfigurationError.__name__: "the repository's test configuration is invalid; fix it and resume",
    RepositoryNotAllowedError.__name__: "the repository cannot be read as given (the error names the rule or the "
                                        "bound it passed); fix it and start a new run",
}


@dataclass(frozen=True)
class Classification:
    kind: FailureKind
    action: RecoveryAction
    reason: str


def classify(error_name: str, cause: str, replans: int, max_replans: int,
             failed_stage: str | None = None) -> Classification:
    if error_name in REVIEW_WAIT_TIMEOUTS and failed_stage == Stage.AWAIT_REVIEW:
        return Classification(FailureKind.NEEDS_PERSON, RecoveryAction.HANDOFF,
                              "the review timed out; nobody answered in time")
    if error_name == StaleContextError.__name__:
        if replans > max_replans:
            return Classification(FailureKind.STALE_CONTEXT, RecoveryAction.HANDOFF,
                                  f"context went stale after {replans} replans")
        return Classification(FailureKind.STALE_CONTEXT, RecoveryAction.REPLAN,
                              "inputs changed since they were read: replan")
    if error_name == SupersededExecutionError.__name__:
        return Classification(FailureKind.SUPERSEDED, RecoveryAction.ABANDON, "a newer execution owns this run")
    if error_name in RETRYABLE_ERRORS:
        return Classification(FailureKind.RETRYABLE, RecoveryAction.HANDOFF,
                              f"{error_name} persisted after the retries")
    return Classification(FailureKind.NEEDS_PERSON, RecoveryAction.HANDOFF,
                          WHY_A_PERSON.get(error_name, f"unclassified error {error_name}: a person decides"))


def parse_cause(cause: str | None) -> dict[str, Any]:
    """Step Functions hands the Lambda error payload over as a JSON string in Cause."""
    if not cause:
        return {}
    try:
        parsed = json.loads(cause)
    except json.JSONDecodeError:
        return {"errorMessage": cause}
    return parsed if isinstance(parsed, dict) else {"errorMessage": cause}
