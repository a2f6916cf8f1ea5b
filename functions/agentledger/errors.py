"""Typed errors, every one in this module. The class name is the error name Step Functions sees,
so the state machine's Retry and Catch rules and the restart policy match on these names. An error
the API answers with a status of its own names it (`http_status`); any other that reaches the API
is its defect, answered 500."""
from __future__ import annotations

from http import HTTPStatus
from typing import ClassVar


class LedgerError(Exception):
    """Base class of every error the workflow raises on purpose."""

    http_status: ClassVar[HTTPStatus | None] = None


class RunNotFoundError(LedgerError):
    http_status = HTTPStatus.NOT_FOUND


class RunAlreadyExistsError(LedgerError):
    pass


class RecordSchemaError(LedgerError):
    """A stored record whose schema version this release does not read: a later release wrote it."""


class IllegalTransitionError(LedgerError):
    """The transition table does not allow this move; nothing was written."""


class ConcurrentModificationError(LedgerError):
    """Another worker changed the run since it was read; nothing was written."""


class StaleContextError(LedgerError):
    """Evidence a stage depends on no longer matches the world: the run must replan."""


class SupersededExecutionError(LedgerError):
    """An execution that no longer owns the run (a newer resume took over) tried to act on it."""


class TransientError(LedgerError):
    """A failure worth retrying as it is (throttling, a timeout talking to a dependency)."""


class BuildQueueTimeoutError(LedgerError):
    """A stage waited for room to start its build while no build of the project ended for hours:
    the queue is stuck, not long."""


class BuildWaitNotNeededError(LedgerError):
    """The build a stage would wait for has already ended (or is not there): the state machine
    goes back to the stage at once, which reads it."""


class VerificationFailedError(LedgerError):
    """The test command ran and failed: a person has to look at the generated tests."""


class GenerationFailedError(LedgerError):
    """The build that writes and filters candidate tests did not finish its work (it failed, timed
    out, or its results could not be read): a person has to look at its output."""


class HiddenTextError(LedgerError):
    """Test files kept as they were written (another ecosystem's: no filter runs on them, so none
    could drop one test of a file) carry a character a reader does not see: none is kept."""


class NoTestsRanError(LedgerError):
    """The test run passed without executing a single test: it shows nothing about the change."""


class TestConfigurationError(LedgerError):
    """The repository's test-run configuration (agentledger.toml, [tool.agentledger]) is invalid."""

    __test__ = False  # not a pytest class


class ReviewRejectedError(LedgerError):
    """A review decision that cannot be applied (wrong state, old plan digest)."""

    http_status = HTTPStatus.CONFLICT


class RunConflictError(LedgerError):
    """The request is well-formed but conflicts with the run's state."""

    http_status = HTTPStatus.CONFLICT


class IdempotencyKeyConflictError(LedgerError):
    """An Idempotency-Key whose first request had another body, or is still in progress."""

    http_status = HTTPStatus.CONFLICT


class RepositoryRejectedError(LedgerError):
    """The repository cannot be used as given."""

    http_status = HTTPStatus.UNPROCESSABLE_ENTITY


class CallerUnknownError(LedgerError):
    """A write whose caller the request context does not name: IAM authorization was bypassed."""

    http_status = HTTPStatus.FORBIDDEN


class RepositoryNotAllowedError(LedgerError):
    """A repository location this deployment does not read; the message names the rule."""


class RepositoryUnavailableError(LedgerError):
    """A repository that is allowed but cannot be read now (not uploaded, or removed)."""


class ReviewForbiddenError(LedgerError):
    """The caller may not decide this review (the run's own requester, without self-approval)."""

    http_status = HTTPStatus.FORBIDDEN


class ArtifactIntegrityError(LedgerError):
    """A stored artifact's bytes do not hash to the digest the ledger recorded."""


class EffectInProgressError(TransientError):
    """Another attempt holds this effect's idempotency lock and the receiver does not show the
    write yet: wait for that attempt to finish or for its lock to expire."""


class EffectUnconfirmedError(LedgerError):
    """The write was sent but the receiver has not confirmed it: re-check, do not resend."""


class EffectFailedError(TransientError):
    """The receiver answered with an error it may recover from; the next attempt looks first."""


class EffectRejectedError(LedgerError):
    """The receiver refused the write for a reason a retry will not fix (bad token, no repository)."""


class EffectRateLimitedError(LedgerError):
    """The receiver's rate limit asks for a longer wait, or more waits, than a run spends on it:
    a person resumes the run once the limit has passed."""
