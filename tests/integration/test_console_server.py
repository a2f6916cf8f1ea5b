"""The console's server side on serve's own port (issue 25): one-time sign-in links, sessions bound
to a principal, CSRF on every POST, the server's Host and Origin checks, and every call made to the
API as the signed-in principal, so the API's own checks hold. The pages themselves are driven in a
browser by tests/e2e/test_console.py."""
from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from agentledger.deploy import STATE_MACHINE_FILE
from agentledger.local.console import CSRF_HEADER, SESSION_COOKIE
from agentledger.local.principals import principal_arn
from agentledger.local.server import LocalApiServer
from tests.stack_driver import Driver

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration


@pytest.fixture
def console(runtime) -> Iterator[LocalApiServer]:
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0).start()
    yield server
    server.stop()


def signed_in(server: LocalApiServer, duty: str) -> requests.Session:
    browser = requests.Session()
    link = server.console.sign_in_links(server.url)[duty]
    answer = browser.get(link, allow_redirects=False, timeout=30)
    assert answer.status_code == 303 and answer.headers["Location"] == "/console/", answer.text
    return browser


def test_a_sign_in_link_signs_in_once_as_its_principal(console: LocalApiServer) -> None:
    links = console.console.sign_in_links(console.url)
    assert set(links) == {"requester", "reviewer", "operator"}
    browser = requests.Session()
    first = browser.get(links["reviewer"], allow_redirects=False, timeout=30)
    cookie = first.headers["Set-Cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert {"HttpOnly", "SameSite=Strict", "Path=/console/"} <= {part.strip() for part in cookie.split(";")}
    session = browser.get(f"{console.url}/console/session", timeout=30).json()
    assert session["duty"] == "reviewer" and session["principal"] == principal_arn("reviewer")

    again = requests.get(links["reviewer"], allow_redirects=False, timeout=30)
    assert again.status_code == 403 and "Set-Cookie" not in again.headers
    token = parse_qs(urlsplit(links["operator"]).query)["token"][0]
    forged = requests.get(f"{console.url}/console/signin?token={token[:-2]}xx", allow_redirects=False, timeout=30)
    assert forged.status_code == 403


@pytest.mark.parametrize("path", ["/console/session", "/console/api/runs", "/console/statemachine",
                                  "/console/history/run-00000000000000000000"])
def test_without_a_session_the_console_answers_nothing_but_its_page(console: LocalApiServer, path: str) -> None:
    assert requests.get(console.url + path, timeout=30).status_code == 401
    forged = requests.get(console.url + path, cookies={SESSION_COOKIE: "made-up"}, timeout=30)
    assert forged.status_code == 401
    page = requests.get(f"{console.url}/console/", timeout=30)
    assert page.status_code == 200 and "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_a_post_without_the_session_s_csrf_token_is_refused(console: LocalApiServer) -> None:
    browser = signed_in(console, "reviewer")
    path = f"{console.url}/console/api/runs/run-00000000000000000000/review"
    body = {"decision": "approve", "plan_digest": "sha256:x"}
    assert browser.post(path, json=body, timeout=30).status_code == 403
    assert browser.post(path, json=body, headers={CSRF_HEADER: "guess"}, timeout=30).status_code == 403
    csrf = browser.get(f"{console.url}/console/session", timeout=30).json()["csrf"]
    # With it, the call reaches the API, which answers as it would a signed request: no such run.
    forwarded = browser.post(path, json=body, headers={CSRF_HEADER: csrf}, timeout=30)
    assert forwarded.status_code == 404 and forwarded.json()["error"] == "Not Found"


def test_another_site_or_a_rebinding_host_is_refused_as_by_the_api(console: LocalApiServer) -> None:
    browser = signed_in(console, "requester")
    port = urlsplit(console.url).port
    from_elsewhere = browser.get(f"{console.url}/console/session", headers={"Origin": "http://evil.example"},
                                 timeout=30)
    assert from_elsewhere.status_code == 403
    rebound = browser.get(f"{console.url}/console/session", headers={"Host": f"evil.example:{port}"}, timeout=30)
    assert rebound.status_code == 403


def test_a_session_expires(console: LocalApiServer) -> None:
    # The console's clock, not the wall's: on a loaded machine signing in can outlast a short session.
    now = time.time()
    console.console.clock = lambda: now
    try:
        browser = signed_in(console, "operator")
        assert browser.get(f"{console.url}/console/session", timeout=30).status_code == 200
        now += console.console.session_seconds - 1
        assert browser.get(f"{console.url}/console/session", timeout=30).status_code == 200
        now += 1
        assert browser.get(f"{console.url}/console/session", timeout=30).status_code == 401
    finally:
        console.console.clock = time.time


def test_signing_out_ends_the_session(console: LocalApiServer) -> None:
    browser = signed_in(console, "operator")
    csrf = browser.get(f"{console.url}/console/session", timeout=30).json()["csrf"]
    assert browser.post(f"{console.url}/console/signout", headers={CSRF_HEADER: csrf}, timeout=30).status_code == 204
    assert browser.get(f"{console.url}/console/session", timeout=30).status_code == 401


def test_the_graph_is_drawn_from_the_definition_aws_runs(console: LocalApiServer) -> None:
    browser = signed_in(console, "operator")
    answer = browser.get(f"{console.url}/console/statemachine", timeout=30)
    assert answer.content == STATE_MACHINE_FILE.read_bytes()
    assert json.loads(answer.content)["StartAt"]


def test_a_static_path_outside_the_console_s_files_is_not_served(console: LocalApiServer) -> None:
    browser = signed_in(console, "operator")
    for path in ("/console/static/../console.py", "/console/static/%2e%2e/console.py", "/console/static/nope.js",
                 "/console/static/"):
        answer = browser.get(console.url + path, timeout=30)
        assert answer.status_code == 404 and b"import" not in answer.content, path


def test_the_console_reads_a_run_as_the_api_shows_it_to_that_principal(console: LocalApiServer, runtime,
                                                                        sample_repo: Path) -> None:
    driver = Driver(runtime)
    run_id = driver.start(sample_repo)
    view = driver.wait(run_id)
    assert view["run"]["status"] == "awaiting_review", view["run"]
    requester = signed_in(console, "requester")
    csrf = requester.get(f"{console.url}/console/session", timeout=30).json()["csrf"]

    assert requester.get(f"{console.url}/console/api/runs/{run_id}", timeout=30).json()["run"]["run_id"] == run_id
    # Separation of duties is the API's: the requester's approval through the console is refused.
    approval = {"decision": "approve", "plan_digest": view["run"]["plan_digest"]}
    refused = requester.post(f"{console.url}/console/api/runs/{run_id}/review", json=approval,
                             headers={CSRF_HEADER: csrf}, timeout=30)
    assert refused.status_code == 403, refused.text
    assert "requested" in refused.json()["message"]

    history = requester.get(f"{console.url}/console/history/{run_id}", timeout=30).json()
    [execution] = history["executions"]
    assert execution["name"] == f"{run_id}-start" and execution["status"] == "RUNNING"
    entered = [e["stateEnteredEventDetails"]["name"] for e in execution["events"] if "stateEnteredEventDetails" in e]
    assert entered[:2] == ["Assess restart", "Route to next stage"] and "Await review" in entered

    artifact = next(a for a in view["artifacts"] if a["name"] == "plan.json")
    data = requester.get(f"{console.url}/console/artifact/{run_id}", params={"key": artifact["key"]}, timeout=30)
    assert hashlib.sha256(data.content).hexdigest() == artifact["sha256"].removeprefix("sha256:")
    elsewhere = requester.get(f"{console.url}/console/artifact/{run_id}", params={"key": "runs/other/plan.json"},
                              timeout=30)
    assert elsewhere.status_code == 404

    # A history read while the execution ran is not what the page is given once it has ended.
    driver.review(run_id)
    assert driver.wait(run_id)["run"]["status"] == "complete"
    [ended] = requester.get(f"{console.url}/console/history/{run_id}", timeout=30).json()["executions"]
    assert ended["status"] == "SUCCEEDED" and ended["events"][-1]["type"] == "ExecutionSucceeded"
    assert len(ended["events"]) > len(execution["events"])
    assert requester.get(f"{console.url}/console/history/run-00000000000000000000", timeout=30).status_code == 404
    assert requester.get(f"{console.url}/console/history/..%2Fsecrets", timeout=30).status_code == 400
