"""Ten runs started at once on one `agentledger serve` (issue 14): every create is answered 201 for
its own run, every run reaches review by the path a lone run takes (no transition lost or
doubled, none handed to a person), and `serve` holds less than twice the memory it started with.
Fifty and two hundred at once are `make bench`'s (phase e)."""
from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import pytest

from agentledger.local.principals import principal_arn
from agentledger.service import run_id_for
from tests.resident_memory import memory_mib

from .conftest import CALCULATOR, CLI_ENVIRONMENT, E2E_CONTEXT, http, run_cli, served, serving_process

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("concurrent_runs")]
RUNS = 10
START_ATTEMPTS = 10
SETTLE_TIMEOUT_S = 1200  # ends a broken run of this test; how long it takes is `make bench`'s to say
LONE_RUN_PATH = [("created", "created"), ("created", "inspect"), ("inspect", "plan"), ("plan", "execute"),
                 ("execute", "verify"), ("verify", "await_review")]


def test_ten_runs_started_at_once_all_reach_review(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    environment = {**CLI_ENVIRONMENT, "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(profiles)}
    repositories = [_calculator(tmp_path / f"repository-{n}") for n in range(RUNS)]
    keys = [str(uuid.uuid4()) for _ in repositories]
    # The doctest writer: what is shown is the workflow under load, not ten Pynguin searches on two cores.
    with served(tmp_path, environment, *E2E_CONTEXT) as url:
        memory_at_start = memory_mib("VmRSS", serving_process(url))

        def create(repository: Path, key: str) -> tuple[int, str | None]:
            # A throttled start (past the API's start burst) is sent again after Retry-After, with
            # the same key, as the CLI does.
            for _ in range(START_ATTEMPTS):
                response = http(url, "POST", "/runs", {"repository": str(repository), "request": "write tests"},
                                headers={"Idempotency-Key": key}, profiles=profiles)
                if response.status != HTTPStatus.TOO_MANY_REQUESTS:
                    break
                throttled.append(key)
                time.sleep(float(response.headers["Retry-After"]))
            return response.status, (response.body or {}).get("run_id")

        throttled: list[str] = []
        with ThreadPoolExecutor(max_workers=RUNS) as pool:
            created = list(pool.map(create, repositories, keys))
        assert created == [(201, run_id_for(key, principal_arn("requester"))) for key in keys]
        ours = {run_id for _, run_id in created}

        listed = until_all_listed(url, ours, "awaiting_review", profiles)
        missing = ours - {run["run_id"] for run in listed}
        # The runs handed to a person first, with why; then how far the others got.
        stands = sorted((where(url, run_id, profiles) for run_id in missing),
                        key=lambda run: run["status"] == "running")
        assert not missing, json.dumps(stands[:3], indent=1, default=str)[:6000]
        handed_over = run_cli("runs", "--status", "needs_person", "--all", "--api", url, "--json",
                              environment=environment).json()["runs"]
        assert ours.isdisjoint(run["run_id"] for run in handed_over)
        for run_id in sorted(ours):
            view = http(url, "GET", f"/runs/{run_id}", profiles=profiles).body
            assert [(t["from_state"], t["to_state"]) for t in view["transitions"]] == LONE_RUN_PATH, run_id
            assert view["handoff"] is None and view["run"]["executions"] == [f"{run_id}-start"]

        memory_at_end = memory_mib("VmRSS", serving_process(url))
        assert memory_at_start is not None and memory_at_end is not None
        assert memory_at_end < 2 * memory_at_start


def until_all_listed(url: str, run_ids: set[str], status: str, profiles: Path) -> list[dict]:
    """The runs the API lists with that status, once it lists every one of `run_ids`, or as soon as
    one of them is listed as handed to a person (it will not get there)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        runs = listed(url, status, profiles)
        if run_ids <= {run["run_id"] for run in runs} or time.monotonic() > deadline:
            return runs
        if run_ids & {run["run_id"] for run in listed(url, "needs_person", profiles)}:
            return runs
        time.sleep(1)


def listed(url: str, status: str, profiles: Path) -> list[dict]:
    runs, cursor = [], None
    while True:
        query = urlencode({"status": status, "limit": 100, **({"cursor": cursor} if cursor else {})})
        page = http(url, "GET", f"/runs?{query}", profiles=profiles).body
        runs += page["runs"]
        if not (cursor := page.get("next_cursor")):
            return runs


def where(url: str, run_id: str, profiles: Path) -> dict:
    """What a run that did not reach review shows: its status, stage, transitions and executions."""
    view = http(url, "GET", f"/runs/{run_id}", profiles=profiles).body or {}
    run = view.get("run") or {}
    return {"run_id": run_id, "status": run.get("status"), "stage": run.get("stage"),
            "executions": run.get("executions"),
            "transitions": [(t["from_state"], t["to_state"]) for t in view.get("transitions", [])],
            "handoff": view.get("handoff")}


def _calculator(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "calc.py").write_text(CALCULATOR)
    return root
