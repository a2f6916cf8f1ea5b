"""The ReviewKeeper schedule: heartbeat every pending review that still holds, fail the task of
any whose plan went stale, and redeliver a decision the API recorded but could not deliver."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import metric_names
from ..errors import StaleContextError
from ..freshness import Entrance, invalidate, review_still_holds
from ..models import Review, RunStatus, seconds_between, utc_now

if TYPE_CHECKING:
    from ..ports import ExecutionPort, LedgerPort, MetricSink


class ReviewKeeper:
    def __init__(self, ledger: LedgerPort, entrance: Entrance, executions: ExecutionPort, metrics: MetricSink) -> None:
        self.ledger = ledger
        self.entrance = entrance
        self.executions = executions
        self.metrics = metrics

    def keep_reviews_alive(self) -> dict[str, int]:
        counts = {"heartbeats": 0, "stale_failed": 0, "approvals_redelivered": 0}
        oldest = 0.0
        now = utc_now()
        cursor: str | None = None
        while True:
            runs, cursor = self.ledger.list_runs(RunStatus.AWAITING_REVIEW, 100, cursor)
            for run in runs:
                counts[self._keep_review_alive(run.run_id)] += 1
                oldest = max(oldest, seconds_between(run.updated_at, now))
            if cursor is None:
                self.metrics.seconds(metric_names.OLDEST_PENDING_REVIEW, oldest)
                return counts

    def _keep_review_alive(self, run_id: str) -> str:
        ledger = self.ledger.load(run_id)
        review = ledger.review
        assert review is not None
        if review.decision is not None:
            # The API recorded the decision but did not get to answer the task (it crashed).
            self.executions.succeed_task(review.task_token, review_output(review))
            return "approvals_redelivered"
        entry = self.entrance.enter(ledger)
        if not review_still_holds(entry):
            invalidate(self.ledger, entry, review.execution, self.metrics)
            self.executions.fail_task(review.task_token, StaleContextError.__name__, entry.assessment.reason)
            return "stale_failed"
        self.executions.heartbeat(review.task_token)
        return "heartbeats"


def review_output(review: Review) -> dict[str, Any]:
    """What the review task returns to the state machine, whether the API answers it or the keeper
    redelivers: the decision, on the plan the review was for."""
    return {"decision": review.decision, "plan_digest": review.plan_digest}
