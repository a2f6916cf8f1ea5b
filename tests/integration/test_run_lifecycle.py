"""A run from POST /runs through every stage to complete, on the local stack."""
from __future__ import annotations

import hashlib
import urllib.request
from urllib.parse import parse_qs, urlsplit

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
    assert driver.finished(f"{run_id}-start") == "SUCCEEDED"

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
    stages = [name for name in entered if name in STATE_NAMES]
    assert list(dict.fromkeys(stages)) == STATE_NAMES
    # The test build is not polled: its end (CodeBuild's state-change event) wakes the parked wait, so
    # verify looks twice however long the build runs, once to start it and once to read it.
    assert (stages.count("Run test suite"), entered.count("Wait for test build")) == (2, 1)
    assert not [e for e in history if e["type"] == "TaskTimedOut"]
    assert ledger["stages"]["verify"]["attempt"] == 1  # looks are not attempts
    assert len(runtime.codebuild.builds_for(run_id)) == 1


def test_artifacts_are_stored_with_their_hashes(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    driver.wait(run_id)
    driver.review(run_id)
    driver.finished(f"{run_id}-start")
    ledger = driver.view(run_id)

    s3 = runtime.client("s3")
    bucket = runtime.output("ArtifactBucketName")
    names = {a["name"] for a in ledger["artifacts"]}
    assert {"inventory.json", "plan.json", "test-files.json", "changes.diff", "command.json",
            "test-output.txt", "test-results.json", "test-config.json", "test-input.tar.gz", "review-request.json",
            "summary.json", "summary.md"} <= names
    for artifact in ledger["artifacts"]:
        assert artifact["key"].startswith(f"runs/{run_id}/")
        body = s3.get_object(Bucket=bucket, Key=artifact["key"])["Body"].read()
        assert hashlib.sha256(body).hexdigest() == artifact["sha256"]
        assert len(body) == artifact["size"]
        # The presigned link the API hands out works locally too (an S3 endpoint on loopback), for
        # the deployment's artifactLinkSeconds (cdk.json: 10 minutes), not hours.
        with urllib.request.urlopen(artifact["url"], timeout=10) as response:
            assert response.read() == body
        assert parse_qs(urlsplit(artifact["url"]).query)["X-Amz-Expires"] == ["600"]
    diff = next(a for a in ledger["artifacts"] if a["name"] == "changes.diff")
    text = s3.get_object(Bucket=bucket, Key=diff["key"])["Body"].read().decode()
    assert "+++ b/tests/test_slug_generated.py" in text
    assert "slugify" in text


def test_state_machine_payloads_carry_references_not_bulk_data(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    driver.wait(run_id)
    driver.review(run_id)
    driver.finished(f"{run_id}-start")
    for event in runtime.execution_history(f"{run_id}-start"):
        details = event.get("stateExitedEventDetails")
        if details:
            assert len(details["output"]) < 4096
            assert "def slugify" not in details["output"]
            assert f"runs/{run_id}/" in details["output"]


def test_a_suite_past_the_repository_timeout_is_killed_and_handed_to_a_person(driver, runtime, sample_repo):
    (sample_repo / "agentledger.toml").write_text(
        'ecosystem = "custom"\ntest = "echo suite begun; sleep 120"\ntimeout = 2\n')
    run_id = driver.start(sample_repo)
    assert driver.finished(f"{run_id}-start") == "FAILED"

    ledger = driver.view(run_id)
    assert ledger["run"]["status"] == "needs_person", ledger["run"]
    assert ledger["handoff"] is not None, ledger["decisions"]
    assert ledger["handoff"]["details"]["attempted"]["stage"] == "verify"
    [test_run] = ledger["test_runs"].values()
    report = test_run["report"]
    assert report["outcome"] == "timed_out" and report["timed_out"] is True
    assert "killed after the 2 s timeout" in report["reason"]
    output = next(a for a in ledger["artifacts"] if a["name"] == "test-output.txt")
    with urllib.request.urlopen(output["url"], timeout=10) as response:
        assert "suite begun" in response.read().decode()
    [build] = runtime.codebuild.builds_for(run_id)
    assert build.done.is_set()
