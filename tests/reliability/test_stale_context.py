"""A source file changes while the run is paused: the stale plan is rejected, recorded with
what changed, and never executed further; the run replans."""
from __future__ import annotations

import pytest

from tests.samples import EDITED_FILE, edit_sample_repository

pytestmark = pytest.mark.reliability


def _plan_digest_used_by_execute(view):
    return view["stages"]["execute"]["inputs"]["plan"]


@pytest.mark.parametrize("paused_after", ["inspect", "plan", "execute", "verify"])
def test_source_change_while_paused_invalidates_the_plan(driver, runtime, sample_repo, paused_after):
    run_id = driver.start(sample_repo, crash=f"{paused_after}:after_commit")
    assert driver.finished(f"{run_id}-start") == "FAILED"
    paused = driver.view(run_id)
    old_plan = paused["run"].get("plan_digest")

    assert edit_sample_repository(sample_repo) == EDITED_FILE
    resumed = driver.resume(run_id)
    assert resumed.status == 200, resumed.body
    assessment = resumed.json()["assessment"]
    evidence = {e["name"]: e for e in assessment["evidence"]}
    assert evidence["source_tree"]["status"] == "stale"
    assert EDITED_FILE in evidence["source_tree"]["reason"]
    assert assessment["complete"] == []
    assert assessment["next"] == "inspect"
    assert assessment["changed_files"] == {"modified": [EDITED_FILE]}
    if old_plan:
        assert evidence["plan"]["status"] == "stale"
        assert "plan" in assessment["invalidated"]

    driver.wait(run_id, execution=resumed.json()["execution"])
    assert driver.review(run_id).status == 200
    assert driver.finished(resumed.json()["execution"]) == "SUCCEEDED"
    done = driver.view(run_id)
    assert done["run"]["status"] == "complete"
    assert done["run"]["plan_digest"] != old_plan
    assert _plan_digest_used_by_execute(done) == done["run"]["plan_digest"]
    rejections = [d for d in done["decisions"] if d["kind"] in ("stale_plan_rejected", "stale_context")]
    assert len(rejections) == 1
    assert rejections[0]["details"]["changed_files"] == {"modified": [EDITED_FILE]}
    assert rejections[0]["kind"] == ("stale_plan_rejected" if old_plan else "stale_context")
    assert done["run"]["replans"] == 1


def test_approval_of_a_stale_plan_is_refused_and_the_run_replans(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    waiting = driver.wait(run_id)
    old_digest = waiting["review"]["plan_digest"]

    edit_sample_repository(sample_repo)
    refused = driver.review(run_id, plan_digest=old_digest)
    assert refused.status == 409
    assert "stale" in refused.json()["message"] and EDITED_FILE in refused.json()["message"]

    again = driver.wait_for_new_review(run_id, old_digest)
    assert driver.review(run_id, plan_digest=old_digest).status == 409  # a late approval of the old plan
    assert driver.review(run_id, plan_digest=again["review"]["plan_digest"]).status == 200
    assert driver.finished(f"{run_id}-start") == "SUCCEEDED"

    done = driver.view(run_id)
    assert done["run"]["status"] == "complete"
    assert _plan_digest_used_by_execute(done) == again["review"]["plan_digest"] != old_digest
    assert [d["kind"] for d in done["decisions"]].count("stale_plan_rejected") == 1
    summary = next(a for a in done["artifacts"] if a["name"] == "summary.json")
    body = runtime.client("s3").get_object(Bucket=runtime.output("ArtifactBucketName"), Key=summary["key"])["Body"]
    assert again["review"]["plan_digest"] in body.read().decode()


def test_review_keeper_fails_a_review_whose_plan_went_stale(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    old_digest = driver.wait(run_id)["review"]["plan_digest"]
    edit_sample_repository(sample_repo)

    counts = runtime.run_review_keeper()
    assert counts["stale_failed"] >= 1
    again = driver.wait_for_new_review(run_id, old_digest)
    assert again["run"]["replans"] == 1
    assert driver.review(run_id, plan_digest=again["review"]["plan_digest"]).status == 200
    assert driver.finished(f"{run_id}-start") == "SUCCEEDED"


def test_review_keeper_heartbeats_a_review_that_still_holds(driver, runtime, sample_repo):
    run_id = driver.start(sample_repo)
    driver.wait(run_id)
    assert runtime.run_review_keeper()["heartbeats"] >= 1
    assert driver.view(run_id)["run"]["status"] == "awaiting_review"
    assert driver.review(run_id).status == 200
