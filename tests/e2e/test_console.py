"""The local console in a browser (issue 25): signed in with the links `agentledger serve` prints, a
person reads a run that crashed and was resumed (the graph drawn from the definition AWS runs,
coloured by its executions; the timeline; the diff; artifacts checked against the ledger's sha256),
the API refuses the requester's own approval, a reviewer approves and the page follows the run to
`complete` without a reload, and the console refuses what has no session or no CSRF token."""
from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.samples import write_sample_repository

from .conftest import CLI_ENVIRONMENT, E2E_CONTEXT, CliResult, http, run_cli, served

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("console")]

CHROMIUM = "/usr/bin/chromium"
SIGN_IN_LINE = re.compile(r"^console: sign in as the (\w+): (http://\S+)$", re.MULTILINE)
RUN_SETTLE_S = 300  # ends a broken run of the fixture; three runs share two cores
FOLLOW_MS = 180_000  # how long a page may take to follow a run to its next status
SHORT_MS = 30_000  # a page showing what it already fetched (a cold history on a loaded machine)
SKIPPED_ON_RESUME = ("Inspect repository", "Plan tests", "Write tests")
HOSTILE_REQUEST = 'Write tests <b>for</b> "textkit" & <script>alert(1)</script>'


@dataclass
class Console:
    url: str
    links: dict[str, str]  # one-time sign-in links, by duty
    profiles: Path
    resumed: str  # crashed after verify, resumed with the CLI: awaits review in its second execution
    waiting: str  # a plain run awaiting review: the reviewer approves it
    handed_over: str  # crashed after verify and left: needs a person

    def view(self, run_id: str) -> dict[str, Any]:
        response = http(self.url, "GET", f"/runs/{run_id}", profiles=self.profiles)
        assert response.status == 200, response.text
        return response.body

    def run_page(self, run_id: str) -> str:
        return f"{self.url}/console/#/runs/{run_id}"


def _sign_in_links(stdout: Path) -> dict[str, str]:
    deadline = time.monotonic() + 30
    while True:
        links = dict(SIGN_IN_LINE.findall(stdout.read_text()))
        if {"requester", "reviewer", "operator"} <= set(links) or time.monotonic() > deadline:
            assert {"requester", "reviewer", "operator"} <= set(links), stdout.read_text()[-2000:]
            return links
        time.sleep(0.2)


def _until_status(url: str, run_id: str, status: str, profiles: Path) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_SETTLE_S
    while True:
        view = http(url, "GET", f"/runs/{run_id}", profiles=profiles).body
        settled = view["run"]["status"] not in ("running", status)
        if view["run"]["status"] == status or settled or time.monotonic() > deadline:
            assert view["run"]["status"] == status, (view["run"], view.get("handoff"))
            return view
        time.sleep(0.5)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """One `serve` for the module, with three runs in the states the tests read."""
    root = tmp_path_factory.mktemp("console")
    profiles = root / "profiles"
    environment = {**CLI_ENVIRONMENT, "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(profiles)}
    with served(root, environment, *E2E_CONTEXT) as url:
        links = _sign_in_links(root / "stdout")

        def cli(*args: str) -> CliResult:
            return run_cli(*args, "--api", url, "--json", environment=environment)

        def start(name: str, *options: str) -> str:
            repository = write_sample_repository(root / name)
            return cli("run", str(repository), "--no-wait", *options).json()["run_id"]

        def crashed_after_verify(name: str) -> str:
            run_id = start(name, "--crash", "verify:after_artifacts")
            _until_status(url, run_id, "needs_person", profiles)
            return run_id

        def resumed() -> str:
            run_id = crashed_after_verify("resumed")
            assert cli("resume", run_id).json()["execution"] == f"{run_id}-resume-1"
            _until_status(url, run_id, "awaiting_review", profiles)
            return run_id

        def waiting() -> str:
            run_id = start("waiting", "--request", HOSTILE_REQUEST)
            _until_status(url, run_id, "awaiting_review", profiles)
            return run_id

        with ThreadPoolExecutor(max_workers=3) as pool:
            runs = [pool.submit(resumed), pool.submit(waiting), pool.submit(crashed_after_verify, "handed-over")]
            resumed_id, waiting_id, handed_over_id = (run.result() for run in runs)
        yield Console(url, links, profiles, resumed_id, waiting_id, handed_over_id)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    expect.set_options(timeout=SHORT_MS)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield launched
        launched.close()


def _signed_in(browser: Browser, console: Console, duty: str) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.goto(console.links[duty])  # 303 to /console/ with the session cookie
    expect(page.locator("#signed-in-as")).to_have_text(f"Signed in as the {duty}")
    page.close()
    yield context
    context.close()


@pytest.fixture(scope="module")
def requester_context(browser: Browser, console: Console) -> Iterator[BrowserContext]:
    yield from _signed_in(browser, console, "requester")


@pytest.fixture(scope="module")
def reviewer_context(browser: Browser, console: Console) -> Iterator[BrowserContext]:
    yield from _signed_in(browser, console, "reviewer")


def _watched(context: BrowserContext) -> Iterator[Page]:
    """A page whose script never throws and never trips the Content-Security-Policy."""
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.on("console", lambda message: problems.append(message.text)
            if "Content Security Policy" in message.text else None)
    yield page
    page.close()
    assert not problems, problems


@pytest.fixture
def requester(requester_context: BrowserContext) -> Iterator[Page]:
    yield from _watched(requester_context)


@pytest.fixture
def reviewer(reviewer_context: BrowserContext) -> Iterator[Page]:
    yield from _watched(reviewer_context)


def _node(page: Page, state: str):
    return page.locator(f'#graph-svg [data-state="{state}"]')


def test_the_graph_marks_what_the_resume_skipped_and_the_timeline_shows_both_executions(
        console: Console, requester: Page, tmp_path: Path) -> None:
    run_id = console.resumed
    requester.goto(f"{console.url}/console/")
    requester.locator(f'#runs a[href="#/runs/{run_id}"]').click()
    expect(requester.locator("#run-status")).to_contain_text("awaiting review")
    expect(requester.locator("#request-text")).to_have_text("Write tests for the functions that lack them")

    for state in SKIPPED_ON_RESUME:
        expect(_node(requester, state)).to_have_attribute("data-status", "skipped")
        expect(_node(requester, state)).to_contain_text("⤼ skipped on resume")
    suite = _node(requester, "Run test suite")
    expect(suite).to_have_attribute("data-status", "succeeded")  # the latest execution's: resume-1 ran it
    expect(suite).to_have_attribute("aria-label", re.compile(r"By execution: start failed, resume-1 succeeded"))
    expect(_node(requester, "Await review")).to_have_attribute("data-status", "waiting")
    expect(_node(requester, "Open pull request")).to_have_attribute("data-status", "unreached")
    expect(requester.locator(".legend")).to_contain_text("skipped on resume")

    # From the keyboard: a state's attempts across both executions, with their input and output.
    suite.focus()
    requester.keyboard.press("Enter")
    panel = requester.locator("#state-panel")
    expect(panel.locator("#state-h")).to_have_text("Run test suite")
    expect(panel.locator(f'.attempt[data-exec="{run_id}-start"][data-outcome="failed"]')).to_have_count(1)
    expect(panel.locator(f'.attempt[data-exec="{run_id}-resume-1"][data-outcome="succeeded"]')).to_have_count(1)
    expect(panel).to_contain_text("Runtime.ExitError")
    failed = panel.locator(f'.attempt[data-exec="{run_id}-start"][data-outcome="failed"]')
    failed.locator("summary", has_text="Input").click()
    expect(failed.locator("pre").last).to_contain_text(f'"run_id": "{run_id}"')
    _node(requester, "Plan tests").focus()
    requester.keyboard.press("Enter")
    expect(panel).to_contain_text("the resume found plan complete with valid evidence and did not run it again")

    timeline = requester.locator("#timeline-list")
    expect(timeline.locator("li")).to_have_count(2)
    start = timeline.locator(f'li[data-exec="{run_id}-start"]')
    expect(start).to_contain_text("FAILED")
    expect(start).to_contain_text("ExecutionFailed: NeedsPerson")
    expect(start).to_contain_text("retries")
    resumed = timeline.locator(f'li[data-exec="{run_id}-resume-1"]')
    expect(resumed).to_contain_text("a resume")
    expect(resumed).to_contain_text(f"skipped on resume: {', '.join(SKIPPED_ON_RESUME)}")
    svg = requester.locator("#timeline-svg")
    for execution in (f"{run_id}-start", f"{run_id}-resume-1"):
        expect(svg.locator(f'.tl-bar[data-exec="{execution}"]').first).to_be_visible()
    expect(svg.locator(".tl-resume")).to_have_count(1)
    expect(svg.locator(".tl-crash")).to_have_count(1)
    expect(svg.locator(".tl-mark.retry").first).to_be_attached()

    requester.screenshot(path=tmp_path / "resumed-run.png", full_page=True)


def test_the_diff_is_highlighted_and_an_artifact_s_bytes_match_the_ledger(console: Console, requester: Page,
                                                                           tmp_path: Path) -> None:
    run_id = console.resumed
    requester.goto(console.run_page(run_id))
    diff = requester.locator("#diff-box .diff")
    expect(diff.locator(".line.hunk").first).to_contain_text("@@ -0,0 +1,")
    expect(diff.locator(".line.add", has_text="def test_slugify():")).to_have_count(1)
    added = diff.locator(".line.add", has_text="def test_slugify():")
    expect(added.locator(".mark")).to_have_text("+")
    expect(added.locator(".tok-kw")).to_have_text("def")
    expect(added.locator(".tok-def")).to_have_text("test_slugify")
    expect(diff.locator(".line.add .tok-str").first).to_be_visible()

    requester.get_by_role("link", name="Open plan.json (plan)").click()
    expect(requester.locator("#hash-result")).to_have_text("✓ sha256 matches the ledger")
    expect(requester.locator("#hash-result")).to_have_attribute("data-match", "true")
    expect(requester.locator("#artifact-body pre")).to_contain_text('"items": [')  # pretty-printed
    expect(requester).to_have_url(re.compile(rf"#/runs/{run_id}/artifact\?key="))
    requester.screenshot(path=tmp_path / "artifact.png", full_page=True)

    # An artifact's address opens it directly: the diff, checked the same way.
    (diff_ref,) = [a for a in console.view(run_id)["artifacts"] if a["name"] == "changes.diff"]
    requester.goto(f"{console.run_page(run_id)}/artifact?key={quote(diff_ref['key'], safe='')}")
    expect(requester.locator("#artifact-h")).to_have_text("changes.diff")
    expect(requester.locator("#hash-result")).to_have_attribute("data-match", "true")
    expect(requester.locator("#artifact-body .line.add").first).to_be_visible()


def test_the_requester_s_approval_is_refused_with_the_api_s_message(console: Console, requester: Page,
                                                                   tmp_path: Path) -> None:
    run_id = console.resumed
    requester.goto(console.run_page(run_id))
    digest = console.view(run_id)["run"]["plan_digest"]
    expect(requester.locator("#review-digest")).to_have_text(digest)
    requester.get_by_label("Comment").fill("I wrote this request myself")
    requester.get_by_role("button", name="Approve").click()

    refusal = requester.locator("#review-error")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text("403 Forbidden")
    # The same call, signed as the requester: the page shows the API's message, word for word.
    api = http(console.url, "POST", f"/runs/{run_id}/review", {"decision": "approve", "plan_digest": digest},
               profiles=console.profiles)
    assert api.status == 403 and "separation of duties" in api.body["message"]
    expect(refusal.locator(".api-message")).to_have_text(api.body["message"])
    expect(requester.locator("#decisions tr[data-kind='review_refused']").first).to_be_visible()
    expect(requester.locator("#run-status")).to_contain_text("awaiting review")
    requester.screenshot(path=tmp_path / "refused.png", full_page=True)


def test_the_reviewer_approves_and_the_page_follows_the_run_to_complete(console: Console, reviewer: Page,
                                                                         tmp_path: Path) -> None:
    run_id = console.waiting
    reviewer.goto(f"{console.url}/console/")
    waiting_row = reviewer.locator(f'#needs-person tr[data-run-id="{run_id}"]')  # a reviewer's runs come first
    expect(waiting_row).to_contain_text("awaiting review")
    expect(waiting_row).to_contain_text(HOSTILE_REQUEST)  # shown as text, never as markup
    waiting_row.get_by_role("link").click()
    expect(reviewer.locator("#request-text")).to_have_text(HOSTILE_REQUEST)
    reviewer.evaluate("window.sameDocument = true")

    reviewer.get_by_label("Comment").fill("Checked the diff and the evidence in the console")
    reviewer.get_by_role("button", name="Approve").click()
    expect(reviewer.locator("#flash")).to_contain_text("Approved")
    expect(reviewer.locator("#run-status")).to_contain_text("complete", timeout=FOLLOW_MS)
    assert reviewer.evaluate("window.sameDocument") is True  # followed by polling, never reloaded

    view = console.view(run_id)
    effects = {effect["kind"]: effect for effect in view["effects"].values()}
    pull_request, ticket = effects["pull_request"]["receiver_url"], effects["ticket"]["receiver_url"]
    assert pull_request == view["summary"]["pull_request"] and ticket
    expect(reviewer.locator('#effects a[data-kind="pull_request"]')).to_have_attribute("href", pull_request)
    expect(reviewer.locator('#effects a[data-kind="ticket"]')).to_have_attribute("href", ticket)
    expect(reviewer.locator("#pull-request a")).to_have_attribute("href", pull_request)
    expect(reviewer.locator('#effects tr[data-kind="pull_request"]')).to_contain_text("confirmed")
    expect(reviewer.locator("#requested-by")).to_have_text("agentledger-requester")
    expect(reviewer.locator("#decided-by")).to_have_text("agentledger-reviewer")
    expect(_node(reviewer, "Open pull request")).to_have_attribute("data-status", "succeeded")
    expect(_node(reviewer, "Run complete")).to_have_attribute("data-status", "succeeded")
    reviewer.screenshot(path=tmp_path / "approved.png", full_page=True)


def test_a_run_that_needs_a_person_is_listed_first_and_resumed_from_its_page(console: Console, requester: Page,
                                                                             tmp_path: Path) -> None:
    run_id = console.handed_over
    requester.goto(f"{console.url}/console/")
    needing = requester.locator(f'#needs-person tr[data-run-id="{run_id}"]')
    expect(needing).to_contain_text("needs a person")
    requester.screenshot(path=tmp_path / "runs.png", full_page=True)

    # The run's page in a second tab; the list stays open and is never reloaded.
    page = requester.context.new_page()
    page.goto(console.run_page(run_id))
    expect(page.locator("#handoff")).to_be_visible()
    assert page.locator("main > section.card:visible").nth(1).get_attribute("id") == "handoff"  # first after the header
    expect(page.locator("#handoff-message")).to_contain_text("verify:after_artifacts")
    page.screenshot(path=tmp_path / "handed-over.png", full_page=True)
    page.get_by_role("button", name="Resume from what is still valid").click()
    expect(page.locator("#flash")).to_contain_text(f"{run_id}-resume-1")
    expect(page.locator("#run-status")).to_contain_text("awaiting review", timeout=FOLLOW_MS)
    expect(page.locator("#handoff")).to_be_hidden()
    page.close()

    expect(needing).to_have_count(0)
    expect(requester.locator(f'#runs tr[data-run-id="{run_id}"]')).to_have_attribute("data-status", "awaiting_review")
    requester.get_by_label("Show runs with status").select_option("awaiting_review")
    expect(requester).to_have_url(re.compile(r"#/\?status=awaiting_review$"))
    expect(requester.locator(f'#runs tr[data-run-id="{run_id}"]')).to_be_visible()
    expect(requester.locator('#runs tbody tr:not([data-status="awaiting_review"])')).to_have_count(0)


def test_a_post_without_the_csrf_token_is_refused(console: Console, requester: Page) -> None:
    run_id = console.waiting
    requester.goto(f"{console.url}/console/")
    expect(requester.locator("#signed-in-as")).to_have_text("Signed in as the requester")
    decisions = len(console.view(run_id)["decisions"])
    path = f"{console.url}/console/api/runs/{run_id}/review"
    body = {"decision": "request_changes", "plan_digest": console.view(run_id)["run"]["plan_digest"]}
    for headers in ({}, {"X-CSRF-Token": "a-guess"}):
        refused = requester.request.post(path, data=body, headers={"Content-Type": "application/json", **headers})
        assert refused.status == 403, refused.text()
        assert "X-CSRF-Token" in refused.json()["message"]
    assert len(console.view(run_id)["decisions"]) == decisions  # the API never saw them


def test_without_a_session_the_console_is_unusable_and_a_used_link_signs_in_nobody(
        console: Console, browser: Browser, requester_context: BrowserContext, tmp_path: Path) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{console.url}/console/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.locator("#sign-in")).to_contain_text("Sign in with a link agentledger serve printed")
    page.screenshot(path=tmp_path / "sign-in.png", full_page=True)
    for path in ("/console/session", "/console/api/runs", f"/console/history/{console.resumed}",
                 "/console/statemachine", f"/console/artifact/{console.resumed}?key=x"):
        assert context.request.get(console.url + path).status == 401, path

    used = page.goto(console.links["requester"])  # the requester's context signed in with it already
    assert used is not None and used.status == 403
    expect(page.get_by_role("heading", name="This sign-in link is not valid")).to_be_visible()
    assert context.request.get(f"{console.url}/console/session").status == 401
    page.goto(f"{console.url}/console/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    context.close()


def test_signing_out_ends_the_session(console: Console, browser: Browser, tmp_path: Path) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(console.links["operator"])
    expect(page.locator("#signed-in-as")).to_have_text("Signed in as the operator")
    expect(page.locator(f'#runs tr[data-run-id="{console.resumed}"]')).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()
    assert context.request.get(f"{console.url}/console/session").status == 401
    page.screenshot(path=tmp_path / "signed-out.png", full_page=True)
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    context.close()
