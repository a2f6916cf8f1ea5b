"""`agentledger demo` (`make demo`): the main job on the embedded local stack, with the failures
the workflow exists for — an interruption after verification, a source change while the run
awaits review, and a lost response from GitHub as it opens the pull request — ending in one JSON
summary line."""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentledger.cli import render
from agentledger.cli.client import ApiClient, ApiError
from agentledger.cli.follow import follow_run
from agentledger.cli.render import metrics_summary as render_metrics
from agentledger.cli.signing import request_signer
from agentledger.deploy import SAMPLE_REPOSITORY
from agentledger.faults import CRASH_HEADER
from agentledger.local.console import PREFIX as CONSOLE_PREFIX
from agentledger.local.metrics import emitted_metrics, summarize
from agentledger.local.principals import write_profiles
from agentledger.local.runtime import LocalRuntime
from agentledger.local.server import LocalApiServer

if TYPE_CHECKING:
    import argparse

INTERRUPTION = "verify:after_commit"  # the process dies after the tests ran, before the summary
LOST_PULL_REQUEST_RESPONSE = "complete:pull_request.after_accept"  # GitHub holds the PR, the answer is lost
FOLLOW_TIMEOUT_S = 180.0
# The demo works on a copy of SAMPLE_REPOSITORY, the one the tests use; it edits the file its plan read.
EDITED_FILE = "textkit/slug.py"


def _step(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def _follow(client: ApiClient, run_id: str) -> dict[str, Any]:
    document = follow_run(client, run_id, timeout_s=FOLLOW_TIMEOUT_S, show_progress=True)
    print(render.outcome(render.printable_document(document)), flush=True)
    return document


def _wait_for_new_review(client: ApiClient, run_id: str, old_digest: str) -> dict[str, Any]:
    deadline = time.monotonic() + FOLLOW_TIMEOUT_S
    while time.monotonic() < deadline:
        document = follow_run(client, run_id, timeout_s=FOLLOW_TIMEOUT_S, show_progress=True)
        review = document.get("review") or {}
        if document["run"]["status"] != "awaiting_review" or review.get("plan_digest") != old_digest:
            print(render.outcome(render.printable_document(document)), flush=True)
            return document
        time.sleep(0.2)
    raise TimeoutError(f"{run_id} did not come back for review with a new plan")


def _approve(client: ApiClient, document: dict[str, Any]) -> dict[str, Any]:
    run_id = document["run"]["run_id"]
    response = client.post(f"/runs/{run_id}/review",
                           {"decision": "approve", "plan_digest": document["review"]["plan_digest"]})
    print(render.review_result(render.printable_document(response)), flush=True)
    return response


def run_demo(workdir: Path, port: int, unsafe_local_builds: bool = False) -> dict[str, Any]:
    started = time.monotonic()
    repository = Path(shutil.copytree(SAMPLE_REPOSITORY, workdir / "textkit"))
    print(f"agentledger demo: sample repository at {repository}", flush=True)
    print("agentledger demo: starting the local stack (moto + the synthesized CDK app)...", flush=True)
    runtime = LocalRuntime(workspace_root=workdir / "workspaces", repository_roots=(workdir,),
                           unsafe_local_builds=unsafe_local_builds).start()
    # No review keeper here: the demo shows the API refusing a stale approval itself.
    server = LocalApiServer(runtime, port, keeper_interval_s=0).start()
    # Two people, each known to the API only by the signature on their requests.
    profiles = workdir / "profiles"
    write_profiles(profiles, runtime.principals)
    client = ApiClient(server.url, request_signer(server.url, "agentledger-requester", profiles))
    reviewer = ApiClient(server.url, request_signer(server.url, "agentledger-reviewer", profiles))
    links = server.console.sign_in_links(server.url)
    print(f"agentledger demo: watch it in the console while the demo runs; sign in as the reviewer: "
          f"{links['reviewer']}", flush=True)
    try:
        _step(f"1. the requester starts a run through {server.url}; the process will die after verification "
              f"({INTERRUPTION})")
        created = client.post("/runs", {"repository": str(repository), "request": "Write tests for the "
                                        "functions that lack them", "environment": "dev"},
                              headers={"Idempotency-Key": str(uuid.uuid4()), CRASH_HEADER: INTERRUPTION})
        run_id = created["run_id"]
        runtime.crashes.arm(run_id, LOST_PULL_REQUEST_RESPONSE)
        print(render.created(render.printable_document(created)), flush=True)
        print(f"console: {server.url}{CONSOLE_PREFIX}#/runs/{run_id}", flush=True)
        _follow(client, run_id)

        _step("2. resume: what is complete, what evidence still holds, what is safe next")
        assessment = client.post(f"/runs/{run_id}/resume", {})
        print(render.assessment(render.printable_document(assessment)), flush=True)
        waiting = _follow(client, run_id)

        _step("3. the requester tries to approve its own run")
        try:
            _approve(client, waiting)
        except ApiError as refused:
            print(render.printable(f"refused with HTTP {refused.status}: {refused.message}"), flush=True)

        _step("4. a colleague edits textkit/slug.py while the run awaits review; the reviewer approves the old plan")
        edited = repository / EDITED_FILE
        edited.write_text(edited.read_text().replace("Lower-case words joined", "Lower-case words, joined"))
        try:
            _approve(reviewer, waiting)
        except ApiError as refused:
            print(render.printable(f"refused with HTTP {refused.status}: {refused.message}"), flush=True)
        replanned = _wait_for_new_review(client, run_id, waiting["review"]["plan_digest"])

        _step(f"5. the reviewer approves the new plan; GitHub will lose its answer to the pull request once "
              f"({LOST_PULL_REQUEST_RESPONSE})")
        _approve(reviewer, replanned)
        final = _follow(client, run_id)

        _step("6. the run's timeline")
        print(render.run_timeline(render.printable_document(final)), flush=True)
        print(f"console: {server.url}{CONSOLE_PREFIX}#/runs/{run_id} (served until the demo ends; "
              "`agentledger serve` prints sign-in links for its own runs)", flush=True)
        metrics = summarize(emitted_metrics(runtime))
        _step("7. metrics the handlers emitted")
        print(render_metrics(metrics), flush=True)
        return _summary(final, runtime, metrics, time.monotonic() - started)
    finally:
        server.stop()
        runtime.stop()


def _summary(final: dict[str, Any], runtime: LocalRuntime, metrics: dict[str, Any], elapsed_s: float) -> dict[str, Any]:
    run = final["run"]
    run_id = run["run_id"]
    tickets = {key: n for key, n in runtime.github.issues_by_key().items() if key.startswith(run_id)}
    pulls = {key: n for key, n in runtime.github.pulls_by_key().items() if key.startswith(run_id)}
    notifications = {key: n for key, n in runtime.notifications_by_key().items() if key and key.startswith(run_id)}
    handoff = metrics["time_to_handoff_s"]
    generation = final["summary"].get("generation") or {}
    return {
        "run_id": run_id,
        "status": run["status"],
        "stages": {name: record["status"] for name, record in final["stages"].items()},
        "artifacts": sorted({artifact["name"] for artifact in final["artifacts"]}),
        # What the writer's tests are worth: kept of generated, the mutants they kill that the suite
        # did not, and the mutation score and line coverage they add.
        "tests_generated": generation.get("generated", 0),
        "tests_kept": generation.get("kept", 0),
        "mutants_killed": generation.get("mutants_killed", 0),
        "mutation_score_gained": generation.get("mutation_score_gained", 0.0),
        "coverage_gained": generation.get("coverage_gained", 0.0),
        "elapsed_s": round(elapsed_s, 2),
        "interruptions": runtime.crashes.interruptions(run_id),
        "resumes": run["resumes"],
        "stale_plans_rejected": sum(1 for d in final["decisions"] if d["kind"] == "stale_plan_rejected"),
        "requested_by": run["requested_by"],
        "approved_by": final["review"]["decided_by"],
        "self_approvals_refused": sum(1 for d in final["decisions"] if d["kind"] == "review_refused"),
        "pull_requests_at_receiver": sum(pulls.values()),
        "pull_request": next(
            (effect["receiver_url"] for effect in final["effects"].values() if effect["kind"] == "pull_request"), None
        ),
        "tickets_at_receiver": sum(tickets.values()),
        "notifications_at_receiver": sum(notifications.values()),
        # Counted at the receivers (GitHub and the subscribed queue), not from our records.
        "duplicated_side_effects": sum(n - 1 for n in [*pulls.values(), *tickets.values(), *notifications.values()]
                                       if n > 1),
        "duplicates_suppressed": metrics["duplicates_suppressed"],
        "recovery_rate": metrics["recovery_rate"],
        "time_to_handoff_s": handoff["avg"] if handoff else None,
        "metrics": metrics,
    }


def main(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="agentledger-demo-"))
    try:
        summary = run_demo(workdir, args.port, args.unsafe_local_builds)
    finally:
        if args.keep:
            print(f"agentledger demo: kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(summary), flush=True)
    return 0 if summary["status"] == "complete" and summary["duplicated_side_effects"] == 0 else 1
