"""What a run delivers, through the CLI and the local API as a user sees it: the pull request at the
GitHub-compatible receiver (once, whatever crashes on the way), the change applied to a working
tree, a plan that writes nothing, and a request for changes that reaches the planner."""
from __future__ import annotations

import hashlib
import json
import time
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import pytest

from agentledger.local.runtime import LOCAL_GITHUB_REPOSITORY, LOCAL_GITHUB_TOKEN

from .conftest import REVIEWER, CliResult, assert_one_line_error, http, run_cli, wait_for_status

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.e2e
Cli = Callable[..., CliResult]


def _github(pull_request_url: str, path: str) -> Any:
    """The local GitHub-compatible receiver, asked over its REST API as any GitHub client would."""
    parts = urlsplit(pull_request_url)
    request = urllib.request.Request(f"{parts.scheme}://{parts.netloc}/repos/{LOCAL_GITHUB_REPOSITORY}/{path}",
                                     headers={"Authorization": f"Bearer {LOCAL_GITHUB_TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _approve_and_complete(cli: Cli, api_url: str, run_id: str) -> dict[str, Any]:
    assert cli("review", run_id, "--approve", "--profile", REVIEWER).json()["delivered"] is True
    return wait_for_status(api_url, run_id, "complete", timeout_s=60)


def _pulls_for(pull_request_url: str, run_id: str) -> list[dict[str, Any]]:
    every = _github(pull_request_url, "pulls?state=all&per_page=100")
    return [pull for pull in every if f"agentledger-key: {run_id}/pull_request/" in pull["body"]]


def test_an_approved_run_opens_one_pull_request_with_the_files_it_wrote(
        cli: Cli, api_url: str, awaiting_review: dict[str, Any]) -> None:
    run_id = awaiting_review["run"]["run_id"]
    done = _approve_and_complete(cli, api_url, run_id)

    pull_request = done["summary"]["pull_request"]
    effects = {effect["kind"]: effect for effect in done["effects"].values()}
    assert effects["pull_request"]["status"] == "confirmed" and effects["pull_request"]["receiver_url"] == pull_request
    (pull,) = _pulls_for(pull_request, run_id)
    assert pull["html_url"] == pull_request and pull["base"]["ref"] == "main"
    branch = pull["head"]["ref"]
    assert branch.startswith(f"agentledger/{run_id}/")
    head = _github(pull_request, f"git/ref/{quote(f'heads/{branch}')}")["object"]["sha"]
    message = _github(pull_request, f"git/commits/{head}")["message"]
    assert message.startswith(f"Add tests written by agentledger run {run_id}")
    written = json.loads(run_cli("artifact", run_id, "test-files.json", "--api", api_url).stdout)
    assert written and set(written) == {f["path"] for f in done["summary"]["files_changed"]}

    with urllib.request.urlopen(pull_request, timeout=10) as page:  # the link opens locally too
        assert json.loads(page.read())["files"] == written  # the base branch starts empty locally
    text = run_cli("show", run_id, "--api", api_url).stdout
    assert f"  pull     {pull_request}" in text.split("\n\n")[0]
    assert "PR #" in text  # the effects section names the receiver's id


def test_links_in_the_run_view_fetch_the_bytes_they_name(api_url: str, awaiting_review: dict[str, Any]) -> None:
    for artifact in awaiting_review["artifacts"]:
        with urllib.request.urlopen(artifact["url"], timeout=10) as response:  # what `curl LINK` does
            assert hashlib.sha256(response.read()).hexdigest() == artifact["sha256"], artifact["name"]


def test_a_crash_after_github_accepted_the_pull_request_leaves_one_pull_request(cli: Cli, api_url: str,
                                                                                repository: Path) -> None:
    """The lost answer, as a user sees it through the CLI: GitHub took the pull request, the function
    died before it heard so, and the retry finds it instead of opening another. Every other crash point
    inside an effect's write is the reliability suite's (tests/reliability/test_effects.py)."""
    waiting = cli("run", str(repository), "--wait", "--crash", "complete:pull_request.after_accept").json()
    run_id = waiting["run"]["run_id"]
    done = _approve_and_complete(cli, api_url, run_id)
    pull_request = done["summary"]["pull_request"]
    assert len(_pulls_for(pull_request, run_id)) == 1
    effect = next(e for e in done["effects"].values() if e["kind"] == "pull_request")
    assert effect["duplicates_suppressed"] == 1
    ticket = next(e for e in done["effects"].values() if e["kind"] == "ticket")
    issue = _github(pull_request, f"issues/{ticket['receiver_id'].removeprefix('#')}")
    assert f"**Pull request:** {pull_request}" in issue["body"]


def test_apply_writes_the_approved_change_into_the_working_tree_once_and_refuses_a_changed_tree(
        cli: Cli, api_url: str, awaiting_review: dict[str, Any], repository: Path) -> None:
    run_id = awaiting_review["run"]["run_id"]
    _approve_and_complete(cli, api_url, run_id)
    written = json.loads(run_cli("artifact", run_id, "test-files.json", "--api", api_url).stdout)

    applied = run_cli("apply", run_id, "--api", api_url)
    assert applied.exit_code == 0, applied
    assert applied.stdout.startswith(f"applied {run_id} to {repository}: {len(written)} file(s) written")
    for path, content in written.items():
        assert (repository / path).read_text() == content
    again = cli("apply", run_id).json()
    assert again["written"] == [] and again["already_there"] == sorted(written)

    (repository / "calc.py").write_text((repository / "calc.py").read_text() + "\n# edited after the plan\n")
    assert_one_line_error(run_cli("apply", run_id, "--api", api_url),
                          "was not applied", "files the plan read have changed since: calc.py")


def test_apply_refuses_a_run_that_was_not_approved(api_url: str, awaiting_review: dict[str, Any]) -> None:
    run_id = awaiting_review["run"]["run_id"]
    assert_one_line_error(run_cli("apply", run_id, "--api", api_url), "has no approved change yet")


NOTHING_TO_TEST = '''"""Helpers without docstring examples."""


def double(value):
    """Twice the value."""
    return value * 2
'''


def test_a_repository_with_nothing_to_test_ends_nothing_to_do_without_review_ticket_or_pull_request(
        cli: Cli, api_url: str, tmp_path: Path) -> None:
    repository = tmp_path / "plain"
    repository.mkdir()
    (repository / "helpers.py").write_text(NOTHING_TO_TEST)

    finished = cli("run", str(repository), "--wait")
    document = finished.json(exit_code=0)
    assert document["run"]["status"] == "complete" and document["run"]["outcome"] == "nothing_to_do"
    assert sorted(document["stages"]) == ["complete", "inspect", "plan"]
    assert document["effects"] == {} and document["review"] is None
    assert document["summary"]["pull_request"] is None
    run_id = document["run"]["run_id"]
    plan = json.loads(run_cli("artifact", run_id, "plan.json", "--api", api_url).stdout)
    assert plan["items"] == [] and plan["skipped"][0]["target"] == "helpers.py::double"

    human = run_cli("run", str(repository), "--wait", "--api", api_url, "--idempotency-key", "nothing-twice")
    assert human.exit_code == 0 and "complete with nothing to do" in human.stdout
    assert "outcome  nothing to do" in run_cli("show", run_id, "--api", api_url).stdout
    assert_one_line_error(run_cli("apply", run_id, "--api", api_url), "had nothing to do")


def test_request_changes_hands_the_comment_to_the_planner_and_an_unchanged_plan_asks_the_reviewer_again(
        cli: Cli, api_url: str, awaiting_review: dict[str, Any]) -> None:
    run_id, rejected = awaiting_review["run"]["run_id"], awaiting_review["run"]["plan_digest"]
    comment = "also cover multiply"
    sent_back = cli("review", run_id, "--request-changes", "--comment", comment, "--profile", REVIEWER).json()
    assert sent_back["decision"] == "request_changes"

    again = _wait_for_a_new_review(api_url, run_id)
    assert again["review"]["plan_digest"] == rejected  # the reference planner cannot act on free text
    assert again["review"]["unchanged_after"]["comment"] == comment
    assert again["review"]["unchanged_after"]["decided_by"].endswith("/agentledger-reviewer")
    assert any(d["kind"] == "replan_unchanged" for d in again["decisions"])
    brief = run_cli("review", run_id, "--api", api_url, "--profile", REVIEWER).stdout
    assert "Unchanged plan" in brief and f"asked for changes to this very plan: {comment}" in brief


def _wait_for_a_new_review(api_url: str, run_id: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        document = http(api_url, "GET", f"/runs/{run_id}").body
        review = document.get("review") or {}
        if document["run"]["status"] == "awaiting_review" and review.get("decision") is None:
            return document
        assert time.monotonic() < deadline, document["run"]
        time.sleep(0.2)
