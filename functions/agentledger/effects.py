"""Every external write goes through here: an effect record in the ledger, Powertools
idempotency around the write, the key carried to the receiver, look before writing, read back
after writing, and success only once the receiver confirms.

Powertools idempotency alone is not enough: a crash after the receiver accepted the write
leaves the idempotency record INPROGRESS, and an exception deletes it, so a retry would write
again. Reconciliation with the receiver (by the key it carries) closes that gap.

A receiver's rate limit took nothing: the effect function does not sleep on it, it returns the
wait for the state machine's Wait state, and the write is sent again (looking first) after it."""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
)

from agentledger.ports import (
    Confirmation,
    Receiver,
    ReceiverErrorResponse,
    ReceiverNoResponseError,
    ReceiverRateLimitedError,
    ReceiverRejectedError,
    ReceiverUnavailableError,
)
from agentledger.records import new_decision

from . import faults, metric_names
from .errors import (
    EffectFailedError,
    EffectInProgressError,
    EffectRateLimitedError,
    EffectRejectedError,
    EffectUnconfirmedError,
)
from .fingerprints import digest
from .freshness import Entrance, EntryContext, require_fresh_upstream
from .models import ArtifactRef, Effect, EffectStatus, Ledger, utc_now
from .states import EFFECTS, DecisionKind, RunOutcome
from .workflow.writing import GenerationReport, value_markdown

if TYPE_CHECKING:
    from collections.abc import Callable

    from aws_lambda_powertools.utilities.idempotency.persistence.base import (
        BasePersistenceLayer,
    )

    from .config import NotificationSettings
    from .ports import ArtifactPort, LedgerPort, MetricSink, SourcePort

IDEMPOTENCY_WINDOW_S = 7 * 24 * 3600
FILES_ARTIFACT = "files_artifact"
# A receiver's rate limit (GitHub's): the state machine waits out what the receiver names, or,
# when it names nothing, a minute doubled with each limit (as GitHub asks), so no function sleeps
# on the bill. Past these bounds, within one execution, the run goes to a person instead.
RATE_LIMITED = "rate_limited"  # the outcome's status: the state machine's Wait state reads `retry_after_s`
MIN_RATE_LIMIT_WAIT_S = 60
MAX_RATE_LIMIT_WAIT_S = 900
MAX_RATE_LIMIT_WAITS = 5
# A write held back by the token's budget (pacing.py) queues for it, in turns of at most
# MAX_RATE_LIMIT_WAIT_S, for at most this long in one execution; its turns are not limits met.
MAX_PACED_WAIT_S = 24 * 3600


def effect_key(run_id: str, name: str, payload: dict[str, Any]) -> str:
    """Run + effect kind + the digest of the content it commits to."""
    return f"{run_id}/{name}/{digest(payload).removeprefix('sha256:')[:16]}"


def rate_limit_wait_s(retry_after_s: float | None, earlier_waits: int) -> int:
    """Whole seconds to wait before sending again: what the receiver named (at least one), or, when
    it named nothing, a minute doubled for each earlier wait, up to the bound."""
    if retry_after_s is not None:
        return max(1, math.ceil(retry_after_s))
    return min(MIN_RATE_LIMIT_WAIT_S * 2 ** earlier_waits, MAX_RATE_LIMIT_WAIT_S)


def _past_rate_limit_bounds(effect: Effect, wait_s: int, limits: int, paced_s: int) -> str | None:
    """Why a person resumes instead of the run waiting, when the wait, the count of limits met or
    the time paced in this execution is past its bound."""
    if paced_s > MAX_PACED_WAIT_S:
        return (f"{effect.kind} has waited {paced_s} s in this execution for the {effect.receiver} token's write "
                f"budget, more than {MAX_PACED_WAIT_S} s; resume the run once fewer runs are writing")
    if wait_s > MAX_RATE_LIMIT_WAIT_S:
        return (f"{effect.receiver} asks to wait {wait_s} s, longer than the {MAX_RATE_LIMIT_WAIT_S} s a run waits "
                "for a rate limit; resume the run once it has passed")
    if limits > MAX_RATE_LIMIT_WAITS:
        return f"{effect.receiver} rate-limited {effect.kind} {limits} times in this execution; resume the run later"
    return None


class EffectRunner:
    def __init__(self, settings: NotificationSettings, ledger: LedgerPort, artifacts: ArtifactPort, sources: SourcePort,
                 receivers: dict[str, Receiver], persistence: BasePersistenceLayer, metrics: MetricSink) -> None:
        self.settings = settings
        self.ledger = ledger
        self.artifacts = artifacts
        self.entrance = Entrance(sources, artifacts.read_manifest, settings.max_replans)
        self.receivers = receivers
        self.persistence = persistence
        self.metrics = metrics

    def deliver(self, run_id: str, execution: str, name: str, lambda_context: Any = None,
                entry: EntryContext | None = None) -> dict[str, Any]:
        """`entry`: the one the invocation made for the stage this effect follows, when it sends the
        effect too (the review notification): nothing is read again for the effect's own entry."""
        spec = EFFECTS[name]
        entry = entry or self.entrance.enter(self.ledger.load(run_id))
        ledger = entry.ledger
        require_fresh_upstream(self.ledger, entry, spec.stage, execution, self.metrics)
        reason = self._skip_reason(ledger, name)
        if reason is not None:
            self.ledger.append(run_id, new_decision(DecisionKind.EFFECT_SKIPPED, reason, {"effect": name}, execution))
            return {"run_id": run_id, "effect": name, "status": "skipped", "reason": reason}
        receiver = self.receivers[spec.receiver]
        self._require_links(ledger, name)
        payload = _PAYLOADS[name](ledger, self.artifacts)
        key = effect_key(run_id, name, payload)
        try:
            return self._deliver_key(run_id, execution, name, key, payload, ledger, receiver, lambda_context)
        except ReceiverRateLimitedError as limited:
            return self._rate_limited(run_id, execution, key, limited)

    def _deliver_key(self, run_id: str, execution: str, name: str, key: str, payload: dict[str, Any], ledger: Ledger,
                     receiver: Receiver, lambda_context: Any) -> dict[str, Any]:
        spec = EFFECTS[name]
        effect = ledger.effects.get(key)
        if effect is not None and effect.status == EffectStatus.CONFIRMED:
            return _outcome(effect)
        recorded = effect is not None
        if effect is None:
            # Held in memory: the ledger's first record of it is the attempt, written before the
            # call, or, when this attempt stops before it, this one (`_record_intent`).
            effect = Effect(key=key, kind=name, stage=spec.stage, receiver=receiver.name,
                            status=EffectStatus.INTENDED, request=payload, execution=execution)
        if effect.status == EffectStatus.UNCONFIRMED and effect.execution == execution:
            return self._recheck(run_id, effect, receiver)
        attempt = _Attempt()
        try:
            result = self._deliver_once(run_id, execution, effect, receiver, lambda_context, attempt)
        except IdempotencyAlreadyInProgressError:
            found = receiver.find(key)
            if found:
                return self._confirm(run_id, execution, effect, receiver, found[0], suppressed=True, found=found)
            self._record_intent(run_id, effect, recorded, attempt)
            raise EffectInProgressError(f"another attempt is delivering {key}; "
                                        "the receiver does not show it yet") from None
        except Exception:
            self._record_intent(run_id, effect, recorded, attempt)
            raise
        # What this invocation wrote is the record as it stands; only a result an earlier attempt
        # saved (its write, and its record, not this invocation's) is read back from the ledger.
        latest = attempt.written[-1] if attempt.written else self.ledger.load(run_id).effects.get(key, effect)
        return self._confirm(run_id, execution, latest, receiver, Confirmation(**result["confirmation"]),
                             suppressed=result["suppressed"], found=attempt.found)

    def _record_intent(self, run_id: str, effect: Effect, recorded: bool, attempt: _Attempt) -> None:
        """An attempt that stopped before the call (another holds the lock, the receiver asked to
        wait, the look failed) leaves the effect in the ledger as intended, if nothing recorded it."""
        if not recorded and not attempt.written:
            self.ledger.append(run_id, effect)

    def _rate_limited(self, run_id: str, execution: str, key: str, limited: ReceiverRateLimitedError) -> dict[str, Any]:
        """The receiver took nothing and asked for a wait: recorded as a decision, and handed to the
        state machine's Wait state; past the bounds, to a person."""
        ledger = self.ledger.load(run_id)
        effect = ledger.effects[key]
        earlier = [d for d in ledger.decisions if d.kind == DecisionKind.RATE_LIMITED
                   and d.execution == execution and d.details.get("key") == key]
        limits_met = sum(1 for d in earlier if not d.details.get("paced"))
        paced_s = sum(int(d.details["wait_s"]) for d in earlier if d.details.get("paced"))
        if limited.paced:
            wait_s = min(rate_limit_wait_s(limited.retry_after_s, 0), MAX_RATE_LIMIT_WAIT_S)
            paced_s += wait_s
        else:
            wait_s = rate_limit_wait_s(limited.retry_after_s, limits_met)
            limits_met += 1
        if effect.status == EffectStatus.ATTEMPTED:  # not taken: the next attempt looks, then sends
            self._record_failure(run_id, effect, EffectStatus.FAILED, limited)
        self.metrics.count(metric_names.RECEIVER_PACED if limited.paced else metric_names.RECEIVER_RATE_LIMITED)
        why = _past_rate_limit_bounds(effect, wait_s, limits_met, paced_s)
        waiting = "paced to the token's write budget" if limited.paced else "rate-limited"
        summary = why or f"{effect.receiver} {waiting} {effect.kind}: waiting {wait_s} s before sending again"
        self.ledger.append(run_id, new_decision(DecisionKind.RATE_LIMITED, summary, {
            "effect": effect.kind, "key": key, "receiver": effect.receiver, "wait_s": wait_s, "paced": limited.paced,
            "retry_after_s": limited.retry_after_s, "answer": str(limited)}, execution))
        if why is not None:
            raise EffectRateLimitedError(f"{why} ({limited})") from limited
        return {"run_id": run_id, "effect": effect.kind, "status": RATE_LIMITED, "key": key,
                "retry_after_s": wait_s, "receiver_id": None, "receiver_url": None}

    def _skip_reason(self, ledger: Ledger, name: str) -> str | None:
        receiver = EFFECTS[name].receiver
        if receiver not in self.receivers:
            return f"no {receiver} receiver is configured; {name} skipped"
        if name == "pull_request" and ledger.run.outcome == RunOutcome.EMPTY_PLAN_REVIEWED:
            return "the approved plan writes no files; no pull request"
        if name == "pull_request" and ledger.run.outcome == RunOutcome.NO_TESTS_KEPT:
            return "no candidate test passed the filters; no pull request"
        return None

    def _require_links(self, ledger: Ledger, name: str) -> None:
        """An effect that links others is written after them: its content (and so its key) must
        not depend on whether they happened to be confirmed when an attempt looked."""
        for linked in EFFECTS[name].links:
            if ledger.confirmed(linked) is None and self._skip_reason(ledger, linked) is None:
                raise EffectInProgressError(f"{name} links the {linked}, which is not confirmed yet")

    def _recheck(self, run_id: str, effect: Effect, receiver: Receiver) -> dict[str, Any]:
        """Sent, never answered: look again, and never resend within the execution that sent it."""
        found = receiver.find(effect.key)
        if found:
            return self._confirm(run_id, effect.execution, effect, receiver, found[0], suppressed=True, found=found)
        self.ledger.append(run_id, effect.model_copy(update={"rechecks": effect.rechecks + 1}))
        self.metrics.count(metric_names.EFFECTS_UNCONFIRMED)
        raise EffectUnconfirmedError(f"{effect.kind} {effect.key} is still unconfirmed after "
                                     f"{effect.rechecks + 1} re-check(s)")

    def _deliver_once(self, run_id: str, execution: str, effect: Effect, receiver: Receiver,
                      lambda_context: Any, attempt: _Attempt) -> dict[str, Any]:
        config = IdempotencyConfig(event_key_jmespath="key", payload_validation_jmespath="payload",
                                   expires_after_seconds=IDEMPOTENCY_WINDOW_S, raise_on_no_idempotency_key=True)
        if lambda_context is not None:
            # The lock of an attempt that dies expires with that attempt's deadline.
            config.register_lambda_context(lambda_context)

        def write(command: dict[str, Any]) -> dict[str, Any]:
            return self._write(run_id, execution, effect, receiver, attempt)

        once: Callable[..., dict[str, Any]] = idempotent_function(
            data_keyword_argument="command", config=config, persistence_store=self.persistence)(write)
        return once(command={"key": effect.key, "payload": effect.request})

    def _write(self, run_id: str, execution: str, effect: Effect, receiver: Receiver,
               attempt: _Attempt) -> dict[str, Any]:
        found = receiver.find(effect.key)  # look before you write
        if found:
            attempt.found = found
            return {"confirmation": asdict(found[0]), "suppressed": True}
        attempted = effect.model_copy(update={"status": EffectStatus.ATTEMPTED, "attempts": effect.attempts + 1,
                                              "attempted_at": utc_now(), "execution": execution, "error": None})
        self.ledger.append(run_id, attempted)  # recorded before the call
        attempt.written.append(attempted)
        faults.reach(run_id, effect.stage, faults.effect_crash_point(effect.kind, "before_call"), execution)
        try:
            accepted = receiver.send(effect.key, self._attached(effect.request))
            faults.reach(run_id, effect.stage, faults.effect_crash_point(effect.kind, "after_accept"), execution)
            confirmed = receiver.read_back(accepted, effect.key)  # read back after you write
        except ReceiverNoResponseError as error:
            self._record_failure(run_id, attempted, EffectStatus.UNCONFIRMED, error)
            raise EffectUnconfirmedError(f"{effect.kind} sent, no confirmation yet: {error}") from error
        except ReceiverRateLimitedError:
            raise  # not taken; `deliver` records it and asks the state machine to wait
        except (ReceiverErrorResponse, ReceiverUnavailableError) as error:
            self._record_failure(run_id, attempted, EffectStatus.FAILED, error)
            raise EffectFailedError(f"{effect.kind} not delivered: {error}") from error
        except ReceiverRejectedError as error:
            self._record_failure(run_id, attempted, EffectStatus.FAILED, error)
            raise EffectRejectedError(f"{effect.kind} refused: {error}") from error
        return {"confirmation": asdict(confirmed), "suppressed": False}

    def _attached(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request with the files it names read from their artifact. The ledger keeps the
        reference and its digest, so the effect record stays small and still commits to the bytes."""
        if FILES_ARTIFACT not in request:
            return request
        files = self.artifacts.get_json(ArtifactRef.model_validate(request[FILES_ARTIFACT]))
        return {**request, "files": files}

    def _record_failure(self, run_id: str, effect: Effect, status: EffectStatus, error: Exception) -> None:
        response = getattr(error, "response", None) or None
        self.ledger.append(run_id, effect.model_copy(update={"status": status, "error": str(error),
                                                             "response": response}))

    def _confirm(self, run_id: str, execution: str | None, effect: Effect, receiver: Receiver,
                 confirmation: Confirmation, *, suppressed: bool,
                 found: list[Confirmation] | None = None) -> dict[str, Any]:
        """`found`: what a look of this invocation found, with nothing written since, so the copies
        the receiver holds are not asked for again; else they are counted now, after the write."""
        copies = len(found or receiver.find(effect.key)) or None
        confirmed = effect.model_copy(update={
            "status": EffectStatus.CONFIRMED, "receiver_id": confirmation.receiver_id,
            "receiver_url": confirmation.url, "response": confirmation.raw, "confirmed_at": utc_now(),
            "duplicates_suppressed": effect.duplicates_suppressed + int(suppressed),
            "receiver_copies": copies, "error": None,
        })
        self.ledger.append(run_id, confirmed)
        self.metrics.count(metric_names.EFFECTS_CONFIRMED)
        if suppressed:
            self.metrics.count(metric_names.DUPLICATES_SUPPRESSED)
        if copies and copies > 1:
            self.metrics.count(metric_names.DUPLICATED_SIDE_EFFECTS, copies - 1)
        faults.reach(run_id, effect.stage, faults.effect_crash_point(effect.kind, "after_record"), execution or "")
        return _outcome(confirmed)


@dataclass
class _Attempt:
    """What one invocation did about an effect: the records it wrote (the latest last), and what
    its look before writing found, when the write was there already."""

    written: list[Effect] = field(default_factory=list)
    found: list[Confirmation] | None = None


def _outcome(effect: Effect) -> dict[str, Any]:
    return {"run_id": effect.key.split("/", 1)[0], "effect": effect.kind, "status": effect.status.value,
            "key": effect.key, "receiver_id": effect.receiver_id, "receiver_url": effect.receiver_url}


# -- what each effect says (deterministic: built from the ledger only, so a retry commits to the
# same content and therefore the same key) --------------------------------------------------------
def _links(ledger: Ledger, artifacts: ArtifactPort) -> dict[str, str]:
    committed = ledger.committed_keys()
    return {ref.name: f"s3://{artifacts.bucket}/{ref.key}" for ref in ledger.artifacts
            if ref.key in committed and ref.name in ("plan.json", "changes.diff", "test-output.txt", "command.json")}


def _review_notification(ledger: Ledger, artifacts: ArtifactPort) -> dict[str, Any]:
    run = ledger.run
    return {
        "subject": f"agentledger: run {run.run_id} awaits review",
        "group": run.run_id,
        "message": {"event": "review_requested", "run_id": run.run_id, "request": run.request,
                    "repository": run.repository, "revision": run.revision, "plan_digest": run.plan_digest,
                    "links": _links(ledger, artifacts),
                    "how_to_review": f"POST /runs/{run.run_id}/review with this plan_digest"},
    }


def _confirmed_url(ledger: Ledger, kind: str) -> str | None:
    confirmed = ledger.confirmed(kind)
    return (confirmed.receiver_url or confirmed.receiver_id) if confirmed else None


def _repository_name(ledger: Ledger) -> str:
    repository = ledger.run.repository
    return PurePosixPath(repository.rstrip("/")).name or repository


def _test_counts(ledger: Ledger) -> str:
    latest = ledger.latest_test_run()
    report = (latest.report if latest else None) or {}
    counts = report.get("counts") or {}
    shown = ", ".join(f"{counts[name]} {name}" for name in ("passed", "failed", "errors", "skipped")
                      if counts.get(name))
    return str(report.get("outcome", "not run")) + (f" ({shown})" if shown else "")


def quoted_text(text: str) -> str:
    """Text as a fenced code block, which GitHub shows as it is: no Markdown, no @mention, no
    issue-closing keyword, no line that passes for one of agentledger's own. The fence is longer
    than any run of backticks inside, so the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _pull_request(ledger: Ledger, artifacts: ArtifactPort) -> dict[str, Any]:
    run = ledger.run
    committed = ledger.committed_keys()
    files = next(ref for ref in reversed(ledger.artifacts) if ref.name == "test-files.json" and ref.key in committed)
    review = ledger.review
    generation = _generation(ledger, artifacts)
    lines = [
        f"Tests written by agentledger run `{run.run_id}` for this request:",
        "",
        quoted_text(run.request),
        "",
        *([*value_markdown(generation), ""] if generation else []),
        f"- **Plan digest:** `{run.plan_digest}`",
        f"- **Requested by:** {run.requested_by or 'unknown'}",
        f"- **Approved by:** {(review.decided_by if review else None) or 'unknown'}",
        f"- **Test suite:** {_test_counts(ledger)}",
        "",
        "**Artifacts**",
        *[f"- {name}: `{uri}`" for name, uri in sorted(_links(ledger, artifacts).items())],
    ]
    return {"title": f"agentledger: tests for {_repository_name(ledger)} ({run.run_id})", "body": "\n".join(lines),
            # Not the request: a commit message is not Markdown, and "Fixes #N" in it would close an issue.
            "commit_message": f"Add tests written by agentledger run {run.run_id}",
            FILES_ARTIFACT: files.model_dump(mode="json")}


def _generation(ledger: Ledger, artifacts: ArtifactPort) -> GenerationReport | None:
    committed = ledger.committed_keys()
    ref = next((ref for ref in reversed(ledger.artifacts) if ref.name == "generation.json" and ref.key in committed),
               None)
    return GenerationReport.model_validate(artifacts.get_json(ref)) if ref else None


def _ticket(ledger: Ledger, artifacts: ArtifactPort) -> dict[str, Any]:
    run = ledger.run
    pull_request = _confirmed_url(ledger, "pull_request")
    lines = [
        f"agentledger run `{run.run_id}` finished its review and is being completed. It was asked:",
        "",
        quoted_text(run.request),
        "",
        f"- **Repository:** `{run.repository}` at `{run.revision}`",
        f"- **Plan digest:** `{run.plan_digest}` (approved)",
        *([f"- **Pull request:** {pull_request}"] if pull_request else []),
        f"- **Evidence:** {', '.join(f'{n} `{e.fingerprint[:19]}`' for n, e in sorted(ledger.evidence.items()))}",
        "",
        "**Artifacts**",
        *[f"- {name}: `{uri}`" for name, uri in sorted(_links(ledger, artifacts).items())],
    ]
    return {"title": f"agentledger: tests for {_repository_name(ledger)} ({run.run_id})", "body": "\n".join(lines),
            "labels": []}


def _completion_notification(ledger: Ledger, artifacts: ArtifactPort) -> dict[str, Any]:
    run = ledger.run
    return {
        "subject": f"agentledger: run {run.run_id} complete",
        "group": run.run_id,
        "message": {"event": "run_completed", "run_id": run.run_id, "plan_digest": run.plan_digest,
                    "pull_request": _confirmed_url(ledger, "pull_request"),
                    "ticket": _confirmed_url(ledger, "ticket"),
                    "links": _links(ledger, artifacts)},
    }


_PAYLOADS: dict[str, Callable[[Ledger, ArtifactPort], dict[str, Any]]] = {
    "review_notification": _review_notification,
    "pull_request": _pull_request,
    "ticket": _ticket,
    "completion_notification": _completion_notification,
}
