"""Driving runs on the local stack (moto + the synthesized template + the real handlers)."""
from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import boto3

from agentledger.adapters.dynamodb_ledger import LedgerStore
from agentledger.local.principals import principal_arn
from agentledger.local.runtime import REGION, poll_intervals
from agentledger.models import RunStatus
from agentledger.service import run_id_for

if TYPE_CHECKING:
    from pathlib import Path

    from agentledger.local.runtime import LocalRuntime

# How long a run may take to settle: a stage with a build polls it every couple of seconds, and
# under a loaded suite (two workers, each with builds in flight) a replan took past 30 s in CI.
SETTLE_TIMEOUT_S = 300.0

# The callers API Gateway's IAM authorization would name, one per duty.
REQUESTER, REVIEWER, OPERATOR = (principal_arn(duty) for duty in ("requester", "reviewer", "operator"))


class Driver:
    """Drives runs through the API handler exactly as API Gateway would call it."""

    def __init__(self, runtime: LocalRuntime) -> None:
        self.runtime = runtime
        self.ledger = LedgerStore(runtime.output("LedgerTableName"), boto3.resource("dynamodb", region_name=REGION))

    def start(self, repo: Path, crash: str | None = None, request: str = "write tests",
              throttle: str | None = None) -> str:
        """`crash` (STAGE:POINT) and `throttle` (SERVICE:OPERATION[:COUNT]) are armed for this run."""
        key = str(uuid.uuid4())
        if crash:
            self.runtime.crashes.arm(run_id_for(key, REQUESTER), crash)
        if throttle:
            self.runtime.throttles.arm(throttle, run_id_for(key, REQUESTER))
        response = self.runtime.call_api("POST", "/runs", body={"repository": str(repo), "request": request},
                                         headers={"Idempotency-Key": key}, caller=REQUESTER)
        assert response.status == 201, response.body
        return response.json()["run_id"]

    def view(self, run_id: str) -> dict[str, Any]:
        response = self.runtime.call_api("GET", f"/runs/{run_id}", caller=OPERATOR)
        assert response.status == 200, response.body
        return response.json()

    def artifact_bytes(self, run_id: str, name: str) -> bytes:
        """The newest artifact of that name the run's view lists, read from the artifact bucket."""
        artifact = [a for a in self.view(run_id)["artifacts"] if a["name"] == name][-1]
        s3 = self.runtime.client("s3")
        return s3.get_object(Bucket=self.runtime.output("ArtifactBucketName"), Key=artifact["key"])["Body"].read()

    def wait(self, run_id: str, execution: str | None = None, timeout_s: float = SETTLE_TIMEOUT_S) -> dict[str, Any]:
        """Until the run settles: its execution finished, or it waits for a review."""
        # Each look reads the run's one ledger item and its execution's status; the run's whole view
        # (the API function, every record) is read once the run looks settled.
        deadline, intervals = time.monotonic() + timeout_s, poll_intervals()
        while time.monotonic() < deadline:
            run = self.ledger.get_run(run_id)
            if run.status == RunStatus.AWAITING_REVIEW:
                view = self.view(run_id)
                if view["run"]["status"] == "awaiting_review" and view.get("review") \
                        and not view["review"].get("decision"):
                    return view
            if self.runtime.execution_status(execution or run.active_execution) in (
                    "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"):
                return self.view(run_id)
            time.sleep(next(intervals))
        raise TimeoutError(f"run {run_id} did not settle in {timeout_s}s: {self.view(run_id)['run']}")

    def wait_for_new_review(self, run_id: str, old_digest: str) -> dict[str, Any]:
        """Until the run waits for a review of a plan other than old_digest."""
        deadline, intervals = time.monotonic() + SETTLE_TIMEOUT_S, poll_intervals()
        while time.monotonic() < deadline:
            if self.ledger.get_run(run_id).status == RunStatus.AWAITING_REVIEW:
                view = self.view(run_id)
                review = view.get("review") or {}
                if view["run"]["status"] == "awaiting_review" and review.get("plan_digest") not in (None, old_digest) \
                        and not review.get("decision"):
                    return view
            time.sleep(next(intervals))
        raise TimeoutError(f"run {run_id} did not come back for review with a new plan in {SETTLE_TIMEOUT_S}s: "
                           f"{self.view(run_id)['run']}")

    def finished(self, execution: str) -> str:
        """The execution's terminal status."""
        return self.runtime.wait_for_execution(execution, timeout_s=SETTLE_TIMEOUT_S)

    def review(self, run_id: str, decision: str = "approve", plan_digest: str | None = None):
        view = self.view(run_id)
        digest = plan_digest or view["review"]["plan_digest"]
        return self.runtime.call_api("POST", f"/runs/{run_id}/review",
                                     body={"decision": decision, "plan_digest": digest}, caller=REVIEWER)

    def resume(self, run_id: str):
        return self.runtime.call_api("POST", f"/runs/{run_id}/resume", caller=OPERATOR)

    def cancel(self, run_id: str, reason: str | None = None):
        return self.runtime.call_api("POST", f"/runs/{run_id}/cancel", body={"reason": reason}, caller=OPERATOR)
