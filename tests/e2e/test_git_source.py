"""A run on a Git source, `git+file://…/repo.git@main`, as a team works against a remote and a branch:
the run records the commit the ref named, and a push that changes a file the plan read gets the
approval refused with that file and the move named; the run replans on the new commit."""
from __future__ import annotations

import subprocess
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.samples import EDITED_FILE, edit_sample_repository, write_sample_repository

from .conftest import REVIEWER, CliResult, http, run_cli, wait_for_status

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.e2e
IDENTITY = ("-c", "user.name=A Colleague", "-c", "user.email=colleague@example.com")


def _git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=work, capture_output=True, text=True, check=True).stdout


def _push(work: Path, message: str) -> str:
    _git(work, "commit", "--quiet", "--all", "--message", message)
    _git(work, "push", "--quiet", "origin", "main")
    return _git(work, "rev-parse", "HEAD").strip()


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, Path]:
    """A bare repository holding the sample on `main`, and a colleague's clone of it."""
    work = write_sample_repository(tmp_path / "work")
    _git(work, "init", "--quiet", "--initial-branch", "main")
    _git(work, "add", "--all")
    _git(work, "commit", "--quiet", "--message", "the sample")
    bare = tmp_path / "remote.git"
    _git(tmp_path, "clone", "--quiet", "--bare", str(work), str(bare))
    _git(work, "remote", "add", "origin", str(bare))
    return bare, work


def test_a_run_on_a_git_ref_records_its_commit_and_a_push_to_a_file_its_plan_read_makes_it_replan(
        cli: Callable[..., CliResult], api_url: str, remote: tuple[Path, Path]) -> None:
    bare, work = remote
    source = f"git+file://{bare}@main"
    first = _git(work, "rev-parse", "HEAD").strip()
    waiting = cli("run", source, "--wait", "--request", "write tests for textkit").json()
    run_id, old_digest = waiting["run"]["run_id"], waiting["review"]["plan_digest"]
    assert waiting["run"]["status"] == "awaiting_review", waiting.get("handoff")
    assert (waiting["run"]["repository"], waiting["run"]["revision"]) == (source, f"git:{first}")
    assert waiting["summary"]["source"].startswith("a Git ref, whose head is looked up at every stage")

    # A colleague pushes a change to a file the plan read while the run waits for review.
    assert edit_sample_repository(work) == EDITED_FILE
    moved = _push(work, "reword the slug docstring")
    refused = cli("review", run_id, "--approve", "--profile", REVIEWER)
    assert refused.exit_code == 1 and "stale" in refused.stderr and EDITED_FILE in refused.stderr, refused
    assert f"git:{first} to git:{moved}" in refused.stderr  # the move, from the tested commit to the head

    replanned = _new_review(api_url, run_id, old_digest)
    assert replanned["run"]["revision"] == f"git:{moved}"  # the new plan is the new commit's
    assert [d["kind"] for d in replanned["decisions"]].count("stale_plan_rejected") == 1
    assert cli("review", run_id, "--approve", "--profile", REVIEWER).json()["decision"] == "approve"
    assert wait_for_status(api_url, run_id, "complete", timeout_s=120)["run"]["revision"] == f"git:{moved}"


def _new_review(api_url: str, run_id: str, old_digest: str, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        view = http(api_url, "GET", f"/runs/{run_id}").body
        review = view.get("review") or {}
        if view["run"]["status"] == "awaiting_review" and review.get("plan_digest") not in (None, old_digest):
            return view
        assert time.monotonic() < deadline, view["run"]
        time.sleep(0.5)


def test_a_git_source_outside_the_roots_or_over_an_unread_transport_is_refused_in_one_line(
        cli: Callable[..., CliResult]) -> None:
    for source, says in (("git+file:///srv/elsewhere.git@main", "agentledger serve --allow-root"),
                         ("git+https://github.com/OWNER/REPO@main", "over https"),
                         ("git+ssh://host/repo.git@main", "is not a Git source")):
        refused = cli("run", source, "--no-wait")
        assert refused.exit_code == 1 and says in refused.stderr and "Traceback" not in refused.stderr, refused


def test_an_uploaded_checkout_says_it_is_a_snapshot_and_names_the_git_source_that_follows_its_branch(
        api_url: str, remote: tuple[Path, Path]) -> None:
    bare, work = remote
    uploaded = run_cli("run", str(work), "--upload", "--no-wait", "--api", api_url)
    assert uploaded.exit_code == 0, uploaded.stderr
    assert f"start it on `agentledger run git+file://{bare}@main`" in uploaded.stderr
