"""A user's journey through the local API: the CLI and plain HTTP against `agentledger serve`."""
from __future__ import annotations

import re
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infra.local.faults import CRASH_POINTS

from .conftest import CliResult, free_port, http, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

STAGES = ["inspect", "plan", "execute", "verify", "await_review", "complete"]
SHA256 = re.compile(r"^[0-9a-f]{64}$")
Cli = Callable[..., CliResult]


def wait_for_status(api_url: str, run_id: str, status: str, timeout_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        document = http(api_url, "GET", f"/runs/{run_id}").body
        if document["run"]["status"] == status or time.monotonic() > deadline:
            assert document["run"]["status"] == status, document["run"]
            return document
        time.sleep(0.2)


def assert_one_line_error(result: CliResult, *fragments: str) -> None:
    assert result.exit_code == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentledger: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def awaiting_review(cli: Cli, repository: Path) -> dict[str, Any]:
    """A run started and followed by the CLI until it waits for review."""
    return cli("run", str(repository), "--wait", "--request", "write tests for calc").json()


def test_run_wait_stops_at_review_with_the_first_four_stages_complete(awaiting_review: dict[str, Any],
                                                                      repository: Path) -> None:
    run, stages = awaiting_review["run"], awaiting_review["stages"]

    assert run["status"] == "awaiting_review"
    assert run["repository"] == str(repository)
    assert run["request"] == "write tests for calc"
    assert [stages[name]["status"] for name in STAGES[:4]] == ["complete"] * 4
    assert stages["await_review"]["status"] == "running"
    assert awaiting_review["review"]["plan_digest"] == run["plan_digest"]


def test_approved_run_completes_with_a_consistent_ledger(cli: Cli, api_url: str,
                                                         awaiting_review: dict[str, Any]) -> None:
    run_id = awaiting_review["run"]["run_id"]

    review = cli("review", run_id, "--approve", "--comment", "looks right").json()
    assert review == {"run_id": run_id, "decision": "approve", "status": "awaiting_review", "delivered": True}
    wait_for_status(api_url, run_id, "complete")
    shown = cli("show", run_id).json()

    assert shown["run"]["state"] == "complete"
    assert [shown["stages"][name]["status"] for name in STAGES] == ["complete"] * 6
    assert all(status["status"] == "valid" for status in shown["evidence_status"].values())
    artifacts = {artifact["key"]: artifact for artifact in shown["artifacts"]}
    outputs = [key for name in STAGES for key in shown["stages"][name]["outputs"]]
    assert sorted(outputs) == sorted(artifacts), "every artifact is a committed output of a stage"
    for key, artifact in artifacts.items():
        # Content-addressed: the key carries the hash of the bytes it names.
        assert SHA256.match(artifact["sha256"])
        assert key.split("/")[:4] == ["runs", run_id, artifact["stage"], artifact["sha256"][:16]]
        assert artifact["size"] > 0
        assert artifact["committed"] is True
        assert artifact["url"]
    # Hash verification against the bytes lives in the integration tests: presigned URLs point at
    # moto's in-process S3, which no other process can reach.


def test_runs_lists_the_run_newest_first(cli: Cli, awaiting_review: dict[str, Any]) -> None:
    listing = cli("runs").json()
    waiting = cli("runs", "--status", "awaiting_review", "--all").json()

    assert listing["runs"][0]["run_id"] == awaiting_review["run"]["run_id"]
    assert awaiting_review["run"]["run_id"] in [run["run_id"] for run in waiting["runs"]]
    assert {run["status"] for run in waiting["runs"]} == {"awaiting_review"}
    assert waiting["next_cursor"] is None


def test_human_views_render_without_json(api_url: str, awaiting_review: dict[str, Any]) -> None:
    run_id = awaiting_review["run"]["run_id"]

    show = run_cli("show", run_id, "--api", api_url)
    runs = run_cli("runs", "--api", api_url, "--limit", "5")

    assert show.exit_code == 0
    assert show.stderr == ""
    for heading in ("Stages", "Evidence (current validity)", "Artifacts", "Effects", "Decisions", "Transitions"):
        assert f"\n{heading}" in show.stdout
    assert run_id in runs.stdout.splitlines()[1]


def test_review_with_an_old_plan_digest_is_refused(cli: Cli, api_url: str, awaiting_review: dict[str, Any]) -> None:
    run_id = awaiting_review["run"]["run_id"]

    refused = cli("review", run_id, "--approve", "--plan-digest", "sha256:old")
    over_http = http(api_url, "POST", f"/runs/{run_id}/review",
                     {"decision": "approve", "plan_digest": "sha256:old"})

    assert_one_line_error(refused, "not sha256:old", awaiting_review["run"]["plan_digest"])
    assert over_http.status == 409
    assert over_http.body["error"] == "Conflict"
    assert http(api_url, "GET", f"/runs/{run_id}").body["run"]["status"] == "awaiting_review"


def test_crashed_run_hands_off_and_resumes_from_what_is_still_valid(cli: Cli, api_url: str,
                                                                     repository: Path) -> None:
    crashed = cli("run", str(repository), "--wait", "--crash", "verify:after_artifacts").json()
    run_id = crashed["run"]["run_id"]

    assert crashed["run"]["status"] == "needs_person"
    assert crashed["handoff"]["details"]["attempted"]["stage"] == "verify"
    assert "verify:after_artifacts" in crashed["handoff"]["details"]["response"]["message"]
    resumed = cli("resume", run_id).json()
    assert resumed["execution"] == f"{run_id}-resume-1"
    assert resumed["assessment"]["complete"] == ["inspect", "plan", "execute"]
    assert resumed["assessment"]["next"] == "verify"
    followed = wait_for_status(api_url, run_id, "awaiting_review")
    assert followed["stages"]["inspect"]["attempt"] == 1, "valid work is not redone"


def test_resume_wait_follows_the_resumed_execution(cli: Cli, repository: Path) -> None:
    crashed = cli("run", str(repository), "--wait", "--crash", "execute:before_work").json()

    final = cli("resume", crashed["run"]["run_id"], "--wait").json()

    assert crashed["run"]["status"] == "needs_person"
    assert final["run"]["status"] == "awaiting_review"
    assert final["run"]["executions"][-1] == f"{crashed['run']['run_id']}-resume-1"


def test_same_idempotency_key_and_body_name_the_same_run(api_url: str, repository: Path) -> None:
    key = str(uuid.uuid4())
    body = {"repository": str(repository), "request": "write tests", "environment": "dev"}

    first = http(api_url, "POST", "/runs", body, {"Idempotency-Key": key})
    again = http(api_url, "POST", "/runs", body, {"Idempotency-Key": key})
    other_body = http(api_url, "POST", "/runs", {**body, "request": "something else"}, {"Idempotency-Key": key})

    assert first.status == again.status == 201
    assert again.body["run_id"] == first.body["run_id"]
    assert other_body.status == 409
    assert "Idempotency-Key" in other_body.body["message"]


@pytest.mark.parametrize(("body", "expected"), [
    ({"repository": "", "environment": "dev"}, "body.repository: String should have at least 1 character"),
    ({"repository": "/nowhere/at/all", "request": "write tests"}, "cannot be read"),
    ({"repository": "/tmp", "request": "write tests", "environment": "no spaces allowed"}, "body.environment"),
])
def test_bad_input_is_422_with_a_readable_message(api_url: str, body: dict[str, Any], expected: str) -> None:
    response = http(api_url, "POST", "/runs", body)

    assert response.status == 422
    assert response.body["error"] == "Unprocessable Entity"
    assert expected in response.body["message"]
    assert "Traceback" not in response.text


def test_unknown_run_is_404_over_http_and_one_line_in_the_cli(cli: Cli, api_url: str) -> None:
    response = http(api_url, "GET", "/runs/run-00000000000000000000")

    assert response.status == 404
    assert response.body == {"error": "Not Found", "message": "no run with id 'run-00000000000000000000'"}
    assert_one_line_error(cli("show", "run-00000000000000000000"), "no run with id 'run-00000000000000000000'")


def test_openapi_document_describes_the_runs_routes(api_url: str) -> None:
    response = http(api_url, "GET", "/openapi.json")

    assert response.status == 200
    assert response.body["openapi"].startswith("3.")
    assert {"/runs", "/runs/{run_id}", "/runs/{run_id}/review", "/runs/{run_id}/resume"} <= set(response.body["paths"])


def test_cli_without_a_server_says_how_to_start_one() -> None:
    url = f"http://127.0.0.1:{free_port()}"

    result = run_cli("runs", "--api", url)

    assert_one_line_error(result)
    assert result.stderr == (f"agentledger: cannot reach the agentledger API at {url}; "
                             "start it with `agentledger serve`\n")


def test_cli_refuses_a_path_that_is_not_a_directory(tmp_path: Path) -> None:
    # No server: the path is checked before any request is made.
    assert_one_line_error(run_cli("run", str(tmp_path / "missing"), "--api", "http://127.0.0.1:9"),
                          "is not a directory")


def test_crash_points_need_no_server() -> None:
    listed = run_cli("crash-points", "--json").json()["crash_points"]

    assert listed == [f"{stage}:{point}" for stage, points in CRASH_POINTS.items() for point in points]
    assert "verify:after_commit" in listed


def test_serve_on_a_busy_port_fails_at_once_with_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]

        result = run_cli("serve", "--port", str(port))

    assert_one_line_error(result, f"cannot listen on 127.0.0.1:{port}")


def test_metrics_report_what_the_handlers_emitted_for_the_runs_made_here(cli: Cli, api_url: str,
                                                                         repository: Path) -> None:
    crashed = cli("run", str(repository), "--wait", "--crash", "plan:after_commit").json()
    run_id = crashed["run"]["run_id"]
    cli("resume", run_id, "--wait")
    cli("review", run_id, "--approve")
    wait_for_status(api_url, run_id, "complete")

    figures = cli("metrics").json()
    runs = cli("runs", "--all").json()["runs"]
    assert figures["runs_started"] == len(runs)
    assert figures["runs_resumed"] == sum(run["resumes"] for run in runs)
    assert figures["runs_recovered"] == sum(1 for run in runs if run["resumes"] and run["status"] == "complete")
    assert figures["recovery_rate"] == round(figures["runs_recovered"] / figures["runs_resumed"], 3)
    assert figures["runs_handed_off"] >= 1 and figures["time_to_handoff_s"]["count"] == figures["runs_handed_off"]
    assert figures["duplicated_side_effects"] == 0
    human = run_cli("--api", api_url, "metrics")
    assert human.exit_code == 0 and "recovery rate" in human.stdout
