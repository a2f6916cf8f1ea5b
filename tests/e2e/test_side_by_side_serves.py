"""Two `agentledger serve`s on one machine, for one user (issue 32): each keeps its callers' keys
for its own port, so the second starting leaves the first one's CLI signing as before. A run on
each, driven to review at the same time, is read afterwards through its own API with the CLI."""
from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest

from agentledger.local.profiles import instance_profiles_dir

from .conftest import CALCULATOR, CLI_ENVIRONMENT, E2E_CONTEXT, REVIEWER, CliResult, run_cli, served, wait_for_status

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("side_by_side_serves")]
REVIEW_TIMEOUT_S = 600  # ends a broken run; two serves' builds share two cores


def test_two_serves_on_one_machine_each_sign_for_and_show_only_their_own_runs(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"  # the one credentials directory of this machine's user
    environment = {**CLI_ENVIRONMENT, "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(profiles)}
    names = ("first", "second")
    repositories = [tmp_path / name / "calculator" for name in names]
    for repository in repositories:
        repository.mkdir(parents=True)
        (repository / "calc.py").write_text(CALCULATOR)

    def cli(url: str, *args: str) -> CliResult:
        return run_cli(*args, "--api", url, "--json", environment=environment)

    with contextlib.ExitStack() as serving:
        # One after the other: the second writes its profiles once the first's are in use.
        urls = [serving.enter_context(served(tmp_path / name, environment, *E2E_CONTEXT))
                for name in names]
        for name, url in zip(names, urls, strict=True):
            callers = next(line for line in (tmp_path / name / "stdout").read_text().splitlines()
                           if line.startswith("callers: "))
            assert f" in {instance_profiles_dir(url, profiles) / 'credentials'}; " in callers
            assert f"--api {url}," in callers

        with ThreadPoolExecutor(max_workers=len(urls)) as pool:
            started = list(pool.map(lambda url, repository: cli(url, "run", str(repository), "--no-wait"),
                                    urls, repositories))
        run_ids = [result.json()["run_id"] for result in started]
        for url, run_id in zip(urls, run_ids, strict=True):
            wait_for_status(url, run_id, "awaiting_review", REVIEW_TIMEOUT_S, profiles)

        for url, run_id, repository in zip(urls, run_ids, repositories, strict=True):
            shown = cli(url, "show", run_id).json()
            assert (shown["run"]["status"], shown["run"]["repository"]) == ("awaiting_review", str(repository))
            assert [run["run_id"] for run in cli(url, "runs").json()["runs"]] == [run_id]
            approved = cli(url, "review", run_id, "--approve", "--profile", REVIEWER).json()
            assert approved["decision"] == "approve"
