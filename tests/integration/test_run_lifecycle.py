"""A run from POST /runs through every stage to complete, on the local stack."""
from __future__ import annotations

import hashlib

import pytest

from agentledger.models import Stage

pytestmark = pytest.mark.integration

STATE_NAMES = ["Assess restart", "Inspect repository", "Plan tests", "Write tests", "Run test suite",
               "Await review", "Complete run"]


def test_run_goes_through_every_stage_to_complete(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    waiting = driver.wait(run_id)
    assert waiting["run"]["status"] == "awaiting_review"
    assert waiting["review"]["plan_digest"] == waiting["run"]["plan_digest"]

    approved = driver.review(run_id)
    assert approved.status == 200, approved.body
    assert runtime.wait_for_execution(f"{run_id}-start") == "SUCCEEDED"

    ledger = driver.view(run_id)
    assert ledger["run"]["status"] == "complete"
    assert {name: s["status"] for name, s in ledger["stages"].items()} == {s.value: "complete" for s in Stage}
    assert all(s["attempt"] == 1 for s in ledger["stages"].values())
    assert {e["status"] for e in ledger["evidence_status"].values()} == {"valid"}

    path = [(t["from_state"], t["to_state"]) for t in sorted(ledger["transitions"], key=lambda t: t["version"])]
    assert [to for _, to in path if _ != to] == ["inspect", "plan", "execute", "verify", "await_review", "complete"]
    versions = [t["version"] for t in ledger["transitions"]]
    assert versions == sorted(set(versions))

    kinds = [d["kind"] for d in ledger["decisions"]]
    assert kinds[0] == "created" and "assessment" in kinds and "review" in kinds

    history = runtime.execution_history(f"{run_id}-start")
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]
    assert [name for name in entered if name in STATE_NAMES] == STATE_NAMES


def test_artifacts_are_stored_with_their_hashes(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    driver.wait(run_id)
    driver.review(run_id)
    runtime.wait_for_execution(f"{run_id}-start")
    ledger = driver.view(run_id)

    s3 = runtime.client("s3")
    bucket = runtime.output("ArtifactBucketName")
    names = {a["name"] for a in ledger["artifacts"]}
    assert {"inventory.json", "plan.json", "test-files.json", "changes.diff", "command.json",
            "test-output.txt", "review-request.json", "summary.json", "summary.md"} <= names
    for artifact in ledger["artifacts"]:
        assert artifact["key"].startswith(f"runs/{run_id}/")
        body = s3.get_object(Bucket=bucket, Key=artifact["key"])["Body"].read()
        assert hashlib.sha256(body).hexdigest() == artifact["sha256"]
        assert len(body) == artifact["size"]
        assert artifact["url"].startswith("https://")
    diff = next(a for a in ledger["artifacts"] if a["name"] == "changes.diff")
    text = s3.get_object(Bucket=bucket, Key=diff["key"])["Body"].read().decode()
    assert "+++ b/agentledger_tests/test_textkit_slug.py" in text
    assert "slugify" in text


def test_state_machine_payloads_carry_references_not_bulk_data(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    driver.wait(run_id)
    driver.review(run_id)
    runtime.wait_for_execution(f"{run_id}-start")
    for event in runtime.execution_history(f"{run_id}-start"):
        details = event.get("stateExitedEventDetails")
        if details:
            assert len(details["output"]) < 4096
            assert "def slugify" not in details["output"]
            assert f"runs/{run_id}/" in details["output"]
