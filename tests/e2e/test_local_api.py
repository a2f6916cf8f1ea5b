"""A user's journey through the local API: the CLI and plain HTTP against `agentledger serve`."""
from __future__ import annotations

import json
import re
import shutil
import socket
import tempfile
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentledger.cli.exit_codes import ExitCode
from agentledger.local.faults import CRASH_POINTS
from agentledger.local.profiles import instance_profiles_dir

from .conftest import (
    E2E_CONTEXT,
    OPERATOR,
    PROFILES_DIR,
    REQUESTER,
    REVIEWER,
    CliResult,
    SharedReview,
    assert_one_line_error,
    free_port,
    http,
    run_cli,
    wait_for_status,
)

pytestmark = pytest.mark.e2e

STAGES = ["inspect", "plan", "execute", "verify", "await_review", "complete"]
SHA256 = re.compile(r"^[0-9a-f]{64}$")
Cli = Callable[..., CliResult]


def test_run_wait_stops_at_review_with_the_first_four_stages_complete(read_only_review: SharedReview) -> None:
    awaiting_review = read_only_review.view
    run, stages = awaiting_review["run"], awaiting_review["stages"]

    assert run["status"] == "awaiting_review"
    assert run["repository"] == str(read_only_review.repository)
    assert run["request"] == "write tests for calc"
    assert [stages[name]["status"] for name in STAGES[:4]] == ["complete"] * 4
    assert stages["await_review"]["status"] == "running"
    assert awaiting_review["review"]["plan_digest"] == run["plan_digest"]


def test_only_the_reviewer_may_approve_and_the_approved_run_completes_with_a_consistent_ledger_naming_both(
        cli: Cli, api_url: str, awaiting_review: dict[str, Any]) -> None:
    run_id = awaiting_review["run"]["run_id"]

    refused = cli("review", run_id, "--approve")  # signed as the requester, who started the run
    assert_one_line_error(refused, "agentledger-requester requested run", "may not approve it")
    over_http = http(api_url, "POST", f"/runs/{run_id}/review",
                     {"decision": "approve", "plan_digest": awaiting_review["run"]["plan_digest"]})
    assert over_http.status == 403 and "separation of duties" in over_http.body["message"]

    review = cli("review", run_id, "--approve", "--comment", "looks right", "--profile", REVIEWER).json()
    assert review == {"run_id": run_id, "decision": "approve", "status": "awaiting_review", "delivered": True}
    shown = wait_for_status(api_url, run_id, "complete")
    assert shown["run"]["requested_by"].endswith(":user/agentledger-requester")
    assert shown["review"]["decided_by"].endswith(":user/agentledger-reviewer")
    by_kind = {d["kind"]: d["actor"] for d in shown["decisions"] if d["actor"]}
    assert by_kind["created"].endswith("/agentledger-requester")
    assert by_kind["review_refused"].endswith("/agentledger-requester")
    assert by_kind["review"].endswith("/agentledger-reviewer")
    text = run_cli("show", run_id, "--api", api_url).stdout
    assert "requested by" in text and "agentledger-requester" in text and "agentledger-reviewer" in text

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


def test_human_views_render_without_json(api_url: str, read_only_review: SharedReview) -> None:
    run_id = read_only_review.view["run"]["run_id"]

    show = run_cli("show", run_id, "--api", api_url)
    runs = run_cli("runs", "--api", api_url, "--all")  # the module's other runs may be newer

    assert show.exit_code == 0
    assert show.stderr == ""
    for heading in ("Stages", "Evidence (current validity)", "Artifacts", "Effects", "Decisions", "Transitions"):
        assert f"\n{heading}" in show.stdout
    assert any(line.startswith(f"{run_id}  awaiting_review") for line in runs.stdout.splitlines()[1:])


def test_review_with_an_old_plan_digest_is_refused(cli: Cli, api_url: str, read_only_review: SharedReview) -> None:
    awaiting_review = read_only_review.view
    run_id = awaiting_review["run"]["run_id"]

    refused = cli("review", run_id, "--approve", "--plan-digest", "sha256:old", "--profile", REVIEWER)
    over_http = http(api_url, "POST", f"/runs/{run_id}/review",
                     {"decision": "approve", "plan_digest": "sha256:old"}, profile=REVIEWER)

    assert_one_line_error(refused, "not sha256:old", awaiting_review["run"]["plan_digest"])
    assert over_http.status == 409
    assert over_http.body["error"] == "Conflict"
    assert http(api_url, "GET", f"/runs/{run_id}").body["run"]["status"] == "awaiting_review"


def test_crashed_run_hands_off_and_resumes_from_what_is_still_valid(cli: Cli, api_url: str,
                                                                     repository: Path) -> None:
    crashed = cli("run", str(repository), "--wait", "--crash", "verify:after_artifacts").json(
        exit_code=ExitCode.NEEDS_PERSON)
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
    crashed = cli("run", str(repository), "--wait", "--crash", "execute:before_work").json(
        exit_code=ExitCode.NEEDS_PERSON)

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
    ({"repository": f"{tempfile.gettempdir()}/agentledger-nowhere/at/all", "request": "write tests"}, "cannot be read"),
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


def test_an_operators_resume_is_recorded_with_its_principal_and_metrics_report_what_the_handlers_emitted(
        cli: Cli, api_url: str, repository: Path) -> None:
    crashed = cli("run", str(repository), "--wait", "--crash", "plan:after_commit").json(
        exit_code=ExitCode.NEEDS_PERSON)
    run_id = crashed["run"]["run_id"]
    cli("resume", run_id, "--wait", "--profile", OPERATOR).json()
    [resume] = [d for d in cli("show", run_id).json()["decisions"] if d["kind"] == "resume"]
    assert resume["actor"].endswith(":user/agentledger-operator")
    cli("review", run_id, "--approve", "--profile", REVIEWER)
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


def test_an_operator_cancels_a_run_for_good_and_show_says_who_and_why(cli: Cli, api_url: str,
                                                                       repository: Path) -> None:
    run_id = cli("run", str(repository), "--no-wait", "--request", "write tests for calc").json()["run_id"]

    human = run_cli("cancel", run_id, "--reason", "the ticket was withdrawn", "--api", api_url, "--profile", OPERATOR)
    assert human.exit_code == 0, human.stderr
    assert human.stdout.startswith(f"cancelled {run_id} (the ticket was withdrawn)")

    shown = cli("show", run_id, "--follow").json()  # settles: a cancelled run waits for nobody
    assert shown["run"]["status"] == "cancelled"
    [cancelled] = [d for d in shown["decisions"] if d["kind"] == "cancelled"]
    assert cancelled["actor"].endswith(":user/agentledger-operator")
    assert cancelled["summary"] == "the ticket was withdrawn"
    assert "was cancelled" in run_cli("show", run_id, "--follow", "--api", api_url).stdout
    assert_one_line_error(run_cli("resume", run_id, "--api", api_url, "--profile", OPERATOR), "cancelled")


# --- who did what ---------------------------------------------------------------------------------

def _signed_headers(api_url: str, path: str, profile: str = REQUESTER) -> dict[str, str]:
    from agentledger.cli.signing import request_signer  # noqa: PLC0415 — what the CLI signs with

    sign = request_signer(api_url, profile, instance_profiles_dir(api_url, PROFILES_DIR))
    return sign("GET", api_url + path, {}, None)


def test_unsigned_badly_signed_and_expired_requests_are_refused_as_api_gateway_does(api_url: str) -> None:
    unsigned = http(api_url, "GET", "/runs", profile=None)
    assert unsigned.status == 403 and unsigned.body["message"] == "Missing Authentication Token"

    headers = _signed_headers(api_url, "/runs")
    tampered = {**headers, "Authorization": headers["Authorization"][:-4] + "0000"}
    wrong = http(api_url, "GET", "/runs", headers=tampered, profile=None)
    assert wrong.status == 403 and "signature we calculated does not match" in wrong.body["message"]

    replayed_elsewhere = http(api_url, "GET", "/runs?limit=1", headers=headers, profile=None)
    assert replayed_elsewhere.status == 403  # the signature covers the query string

    stale = {**headers, "X-Amz-Date": "20200101T000000Z"}
    expired = http(api_url, "GET", "/runs", headers=stale, profile=None)
    assert expired.status == 403 and expired.body["message"].startswith("Signature expired")

    unknown_key = {**headers, "Authorization": headers["Authorization"].replace(
        headers["Authorization"].split("Credential=")[1].split("/")[0], "AKIAXXXXXXXXXXXXXXXX")}
    forged = http(api_url, "GET", "/runs", headers=unknown_key, profile=None)
    assert forged.status == 403 and "security token included in the request is invalid" in forged.body["message"]

    assert http(api_url, "GET", "/runs", headers=headers, profile=None).status == 200  # the untouched original


def test_the_cli_says_where_it_looked_when_it_has_no_credentials(api_url: str, tmp_path: Path) -> None:
    result = run_cli("runs", "--api", api_url, "--profile", "agentledger-nobody")
    assert_one_line_error(result, "agentledger-nobody")


# --- inputs the local API refuses ----------------------------------------------------------------

def _raw(api_url: str, request: bytes) -> tuple[int, bytes, bool]:
    """Sends bytes as they are; returns the status, the rest of what came back, and whether the
    server closed the connection after its answer."""
    host, port = api_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        received = b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                return int(received.split(b" ", 2)[1]), received, True
            received += chunk
            if b"\r\n\r\n" in received:
                head, _, body = received.partition(b"\r\n\r\n")
                length = int(re.search(rb"Content-Length: (\d+)", head)[1])
                if len(body) >= length:
                    connection.settimeout(2)
                    try:
                        closed = connection.recv(1) == b""
                    except TimeoutError:
                        closed = False
                    return int(received.split(b" ", 2)[1]), received, closed


@pytest.mark.parametrize(("headers", "status", "says"), [
    ("Host: evil.example\r\n", 403, b"Host must be this server's loopback address"),
    ("Host: {host}\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\n", 403,
     b"cross-origin requests are refused"),
    ("Host: {host}\r\nContent-Type: text/plain\r\n", 415, b"Content-Type must be application/json"),
    ("Host: {host}\r\n", 415, b"Content-Type must be application/json"),
    ("Host: {host}\r\nContent-Type: application/json\r\nContent-Length: -5\r\n", 400, b"Content-Length must be"),
])
def test_cross_site_and_unframed_posts_are_refused_before_anything_runs(api_url: str, headers: str, status: int,
                                                                         says: bytes) -> None:
    host = api_url.removeprefix("http://")
    body = b'{"repository": "/tmp", "request": "x"}'
    head = headers.format(host=host)
    if "Content-Length" not in head:
        head += f"Content-Length: {len(body)}\r\n"
    answered, received, _ = _raw(api_url, f"POST /runs HTTP/1.1\r\n{head}\r\n".encode() + body)
    assert answered == status and says in received


def test_after_a_413_the_connection_is_closed_so_the_body_is_never_read_as_a_request(api_url: str) -> None:
    host = api_url.removeprefix("http://")
    smuggled = f"GET /runs HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    request = (f"POST /runs HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {2 << 20}\r\n\r\n").encode() + smuggled
    status, received, closed = _raw(api_url, request)
    assert status == 413 and closed
    assert received.count(b"HTTP/1.1") == 1


@pytest.mark.parametrize("path", ["/", "/etc", "/usr/lib"])
def test_the_api_refuses_a_directory_outside_its_roots_and_says_nothing_about_it(api_url: str, path: str) -> None:
    body = {"repository": path, "request": "x", "revision": "tree:sha256:" + "0" * 64}
    refused = http(api_url, "POST", "/runs", body)
    assert refused.status == 422 and "outside the directories this server reads" in refused.body["message"]
    assert "tree:" not in refused.body["message"]  # no digest of the tree, nor whether it matched


def test_run_on_a_directory_outside_the_roots_uploads_it_as_to_a_deployed_api(
        cli: Cli, api_url: str, repository: Path) -> None:
    outside = Path(tempfile.mkdtemp(dir=Path.home(), prefix=".agentledger-e2e-"))  # not under serve's roots
    try:
        (outside / "calc.py").write_text((repository / "calc.py").read_text())
        created = cli("run", str(outside), "--no-wait").json()
        view = http(api_url, "GET", f"/runs/{created['run_id']}").body
        run = view["run"]
        assert run["repository"].startswith("s3://") and run["repository"].endswith(".tar.gz")
        assert view["summary"]["source"].startswith("an uploaded snapshot of the tree: it cannot go stale")
    finally:
        shutil.rmtree(outside, ignore_errors=True)


# --- the deployed path, locally: package, upload through a grant, run from the tarball ------------

def test_run_upload_sends_the_working_tree_without_ignored_files(cli: Cli, api_url: str, repository: Path) -> None:
    import subprocess  # noqa: PLC0415

    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    (repository / ".gitignore").write_text("secret_notes.py\n")
    (repository / "secret_notes.py").write_text(
        'def hidden():\n    """\n    >>> hidden()\n    1\n    """\n    return 1\n')

    waited = cli("run", str(repository), "--upload", "--wait").json()

    run = waited["run"]
    assert run["status"] == "awaiting_review", run
    assert re.fullmatch(r"s3://[a-z0-9.-]+/repositories/[0-9a-f]{24}/[0-9a-f]{64}\.tar\.gz", run["repository"])
    inventory = next(a for a in waited["artifacts"] if a["name"] == "inventory.json")
    with urllib.request.urlopen(inventory["url"], timeout=10) as response:
        listed = response.read().decode()
    assert "calc" in listed and "secret_notes" not in listed


def _grant(api_url: str, data: bytes) -> dict[str, Any]:
    import hashlib  # noqa: PLC0415

    response = http(api_url, "POST", "/uploads", {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
    assert response.status == 201, response.body
    return response.body


def test_the_upload_grant_takes_its_own_key_and_size_only(api_url: str) -> None:
    import hashlib  # noqa: PLC0415

    from agentledger.cli.client import ApiError, upload  # noqa: PLC0415

    data = b"\x1f\x8b" + b"0" * 98
    grant = _grant(api_url, data)
    with pytest.raises(ApiError, match="exceeds the maximum allowed size"):
        upload(grant, data + b"more")
    with pytest.raises(ApiError, match="Policy Condition failed"):
        upload({**grant, "fields": {**grant["fields"], "key": "runs/run-00000000000000000000/plan/plan.json"}}, data)
    upload(grant, data)  # exactly what was granted

    # Never replaced: no second grant for it, and another principal's grant is for a key of its own.
    digest = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    again = http(api_url, "POST", "/uploads", digest)
    assert again.status == 201 and again.body["uploaded"] is True and again.body["url"] is None
    theirs = http(api_url, "POST", "/uploads", digest, profile=REVIEWER)
    assert theirs.body["uploaded"] is False and theirs.body["repository"] != grant["repository"]

    refused = http(api_url, "POST", "/uploads", {"sha256": "../../etc", "size": 10})
    assert refused.status == 422 and "body.sha256" in refused.body["message"]
    too_big = http(api_url, "POST", "/uploads", {"sha256": "ab" * 32, "size": 1 << 40})
    assert too_big.status == 422 and "body.size" in too_big.body["message"]


def test_a_run_from_another_bucket_or_prefix_is_refused_naming_the_rule(api_url: str) -> None:
    for repository in ("s3://someone-elses-bucket/repositories/" + "ab" * 32 + ".tar.gz",
                       "s3://any/runs/run-1/plan/plan.json"):
        response = http(api_url, "POST", "/runs", {"repository": repository, "request": "x"})
        assert response.status == 422 and "repositories/<owner>/<sha256>.tar.gz only" in response.body["message"]


# --- a good Unix tool ------------------------------------------------------------------------------

def test_artifact_and_diff_print_what_the_run_recorded(cli: Cli, api_url: str, read_only_review: SharedReview,
                                                        tmp_path: Path) -> None:
    awaiting_review = read_only_review.view
    run_id = awaiting_review["run"]["run_id"]
    diff = run_cli("diff", run_id, "--api", api_url)
    assert diff.exit_code == 0 and diff.stdout.startswith("---") and "+++ " in diff.stdout

    saved = tmp_path / "results.json"
    written = run_cli("artifact", run_id, "test-results.json", "-o", str(saved), "--api", api_url)
    assert written.exit_code == 0 and saved.read_text().startswith("{")
    recorded = next(a for a in awaiting_review["artifacts"] if a["name"] == "test-results.json")
    import hashlib  # noqa: PLC0415
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == recorded["sha256"]

    unknown = run_cli("artifact", run_id, "nope.txt", "--api", api_url)
    assert_one_line_error(unknown, "no artifact named 'nope.txt'", "test-output.txt")


def test_a_closed_pipe_is_quiet(api_url: str, read_only_review: SharedReview) -> None:
    import subprocess  # noqa: PLC0415

    from .conftest import CLI_COMMAND, CLI_ENVIRONMENT, PROJECT_ROOT  # noqa: PLC0415

    run_id = read_only_review.view["run"]["run_id"]
    # The reader goes away before the CLI has written anything, so every write meets a closed pipe.
    shown = subprocess.Popen([*CLI_COMMAND, "show", run_id, "--api", api_url], cwd=PROJECT_ROOT,
                             env=CLI_ENVIRONMENT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    shown.stdout.close()
    errors = shown.stderr.read()
    assert shown.wait(timeout=60) == ExitCode.CLOSED_PIPE == 141
    assert errors == b""


def test_wait_exits_3_when_the_run_needs_a_person(cli: Cli, repository: Path) -> None:
    (repository / "agentledger.toml").write_text("timeout = 'soon'\n")  # verify hands it to a person
    waited = cli("run", str(repository), "--wait")
    assert waited.exit_code == ExitCode.NEEDS_PERSON == 3, waited
    assert '"needs_person"' in waited.stdout


# --- what a person reads before approving ---------------------------------------------------------

def test_show_opens_with_a_summary_of_what_was_asked_planned_written_and_shown(
        api_url: str, read_only_review: SharedReview) -> None:
    awaiting_review = read_only_review.view
    brief = awaiting_review["summary"]
    assert brief["request"] == "write tests for calc"
    assert brief["plan"]["targets"] == brief["tests"]["written"] >= 1
    assert brief["plan"]["first"][0]["target"].startswith("calc.py::")
    assert [f["path"] for f in brief["files_changed"]] and all(f["lines"] > 0 for f in brief["files_changed"])
    assert brief["tests"]["outcome"] == "passed" and brief["tests"]["passed"] >= 1 and brief["tests"]["failed"] == 0

    text = run_cli("show", awaiting_review["run"]["run_id"], "--api", api_url).stdout
    assert text.startswith("Summary\n  asked    write tests for calc")
    assert "calc.py::add" in text.split("\n\n")[0]


def test_review_without_a_decision_shows_what_is_approved_and_needs_a_terminal_to_ask(
        api_url: str, read_only_review: SharedReview) -> None:
    awaiting_review = read_only_review.view
    run_id = awaiting_review["run"]["run_id"]
    result = run_cli("review", run_id, "--api", api_url, "--profile", REVIEWER)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"Review of {run_id}: plan {awaiting_review['run']['plan_digest']}")
    for heading in ("\nSummary\n", "\nChange\n", "\nTests\n", "\nEvidence\n"):
        assert heading in result.stdout
    assert "no terminal to ask on" in result.stderr


def _read_until_closed(controller: int) -> bytes:
    """What a pseudo-terminal shows until the process on it exits and closes it."""
    import os  # noqa: PLC0415

    seen = b""
    try:
        while chunk := os.read(controller, 65536):
            seen += chunk
    except OSError:
        pass  # the terminal closed with the process
    os.close(controller)
    return seen


def test_review_on_a_terminal_asks_and_records_the_answer(api_url: str, awaiting_review: dict[str, Any]) -> None:
    import os  # noqa: PLC0415
    import pty  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    from .conftest import CLI_COMMAND, CLI_ENVIRONMENT, PROJECT_ROOT  # noqa: PLC0415

    run_id = awaiting_review["run"]["run_id"]
    controller, terminal = pty.openpty()
    process = subprocess.Popen([*CLI_COMMAND, "review", run_id, "--api", api_url, "--profile", REVIEWER],
                               stdin=terminal, stdout=terminal, stderr=terminal, cwd=PROJECT_ROOT, env=CLI_ENVIRONMENT)
    os.close(terminal)
    seen = b""
    while b"[a/r/q]" not in seen:
        seen += os.read(controller, 65536)
    os.write(controller, b"a\n")
    assert process.wait(timeout=60) == 0
    seen += _read_until_closed(controller)
    assert b"approve recorded" in seen
    assert wait_for_status(api_url, run_id, "complete")["review"]["decided_by"].endswith("/agentledger-reviewer")


# --- one configuration, local and deployed ---------------------------------------------------------

def test_serve_takes_the_stacks_context_as_cdk_deploy_does(tmp_path: Path, repository: Path) -> None:
    from .conftest import CLI_ENVIRONMENT, served  # noqa: PLC0415

    profiles = tmp_path / "profiles"
    environment = {**CLI_ENVIRONMENT, "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(profiles)}
    with served(tmp_path, environment, "-c", "allowSelfApproval=true", *E2E_CONTEXT) as url:
        waited = run_cli("run", str(repository), "--wait", "--api", url, "--json", environment=environment)
        run_id = json.loads(waited.stdout)["run"]["run_id"]
        approved = run_cli("review", run_id, "--approve", "--api", url, "--json", environment=environment)
    assert approved.exit_code == 0, approved.stderr  # a one-person team: the requester approves
    assert json.loads(approved.stdout)["decision"] == "approve"


def test_serve_refuses_a_context_key_the_stack_does_not_read() -> None:
    result = run_cli("serve", "--port", str(free_port()), "-c", "allowSelfApprovals=true")
    assert_one_line_error(result, "unknown context key 'allowSelfApprovals'", "allowSelfApproval")


def test_serve_refuses_a_context_key_an_earlier_release_read_with_the_name_it_has_now() -> None:
    result = run_cli("serve", "--port", str(free_port()), "-c", "planner=doctest")
    assert_one_line_error(result, "context key 'planner' is now 'writer'", "-c writer=")


def test_a_live_line_shows_the_running_stage_and_its_time_on_a_terminal(api_url: str, repository: Path) -> None:
    import os  # noqa: PLC0415
    import pty  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    from .conftest import CLI_COMMAND, CLI_ENVIRONMENT, PROJECT_ROOT  # noqa: PLC0415

    (repository / "agentledger.toml").write_text('ecosystem = "custom"\ntest = "sleep 4; echo slow suite done"\n')
    controller, terminal = pty.openpty()
    process = subprocess.Popen([*CLI_COMMAND, "run", str(repository), "--wait", "--api", api_url],
                               stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, cwd=PROJECT_ROOT,
                               env=CLI_ENVIRONMENT)
    os.close(terminal)
    seen = _read_until_closed(controller)
    assert process.wait(timeout=60) == 0
    assert re.search(rb"\r\x1b\[K  \xe2\x80\xa6 verify running for [1-9]\d*s", seen), seen[-2000:]
    assert b"awaiting review" in seen
