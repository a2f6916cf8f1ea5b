"""The wheel installed as a user installs it, into a fresh venv and away from any checkout: without
the local extra, serve and demo say in one line which extra to install, and `pip install
'<wheel>[local]'` then gives an `agentledger` whose --help, serve and demo work (the demo checked in
full: it is `make demo`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentledger.deploy import HOST_ONLY_SUBPACKAGES
from tests.wheel import build_wheel

from .conftest import NODE_MAJOR, REQUESTER, CliResult, assert_one_line_error, free_port, http, served

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


INSTALL_TIMEOUT_S = 600  # moto[all] and aws-cdk-lib, downloaded: a minute or two
DEMO_TIMEOUT_S = 300
# What a venv's pip must not inherit from this one, and what the CLI must not find beside it.
INHERITED = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")


@dataclass(frozen=True)
class Installed:
    venv: Path
    environment: dict[str, str]
    home: Path  # the working directory, and where its caches and callers' profiles go

    def run(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "agentledger"), *args], cwd=self.home, env=self.environment,
                              capture_output=True, text=True, timeout=timeout_s, check=False)

    def pip_install(self, requirement: str) -> None:
        # pip's environment is this one's less what it must not inherit: its cache is the user's.
        environment = {name: value for name, value in os.environ.items() if name not in INHERITED}
        # --no-compile: byte-compiling every installed module (moto's extras alone are thousands) is
        # half the install's time; what the CLI imports is compiled as it imports it.
        installed = subprocess.run([str(self.venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                    "--no-compile", requirement],
                                   cwd=self.home, env=environment, capture_output=True, text=True,
                                   timeout=INSTALL_TIMEOUT_S, check=False)
        assert installed.returncode == 0, installed.stderr[-3000:]


def _fresh_venv(workdir: Path) -> Installed:
    venv, home = workdir / "venv", workdir / "home"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    environment = {name: value for name, value in os.environ.items() if name not in INHERITED}
    environment.update({
        "PATH": f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}",
        # A cache of its own: the installed package synthesizes and builds the layer itself.
        "XDG_CACHE_HOME": str(home / "cache"),
        "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(home / "profiles"),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": NODE_MAJOR,
    })
    return Installed(venv, environment, home)


def test_without_the_local_extra_serve_and_demo_name_it_and_with_it_help_serve_and_demo_work(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """One fresh venv, as a user fills it: the wheel alone, then its local extra added."""
    wheel = build_wheel(tmp_path_factory.mktemp("wheel"))
    installed = _fresh_venv(tmp_path_factory.mktemp("installed"))

    installed.pip_install(str(wheel))
    assert installed.run("--help").returncode == 0
    for command in (["serve", "--port", str(free_port())], ["demo"]):
        result = installed.run(*command)
        refused = CliResult(result.returncode, result.stdout, result.stderr)
        assert_one_line_error(refused, f"{command[0]} needs the local extra", "pip install 'agentledger[local]'")

    installed.pip_install(f"{wheel}[local]")
    helped = installed.run("--help")
    assert helped.returncode == 0 and "serve" in helped.stdout and "demo" in helped.stdout

    logs = installed.home / "serve"
    logs.mkdir()
    with served(logs, installed.environment, command=[str(installed.venv / "bin" / "agentledger")],
                cwd=installed.home) as url:
        listed = http(url, "GET", "/runs", profile=REQUESTER, profiles=installed.home / "profiles")
        assert listed.status == 200 and listed.body["runs"] == []

    demo = installed.run("demo", timeout_s=DEMO_TIMEOUT_S)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    _assert_the_demo_recovered_from_every_injected_failure(demo.stdout)
    _assert_the_code_asset_holds_what_lambda_runs_and_nothing_a_host_runs(installed.home / "cache" / "agentledger")


def _assert_the_code_asset_holds_what_lambda_runs_and_nothing_a_host_runs(cache: Path) -> None:
    """Installed, the host-only subpackages lie inside the agentledger package the asset is taken
    from: the functions' asset leaves them out."""
    code_assets = [handlers.parent.parent for handlers in cache.glob("synth/*/asset.*/agentledger/handlers")]
    assert code_assets
    for asset in code_assets:
        assert sorted(entry.name for entry in asset.iterdir()) == ["agentledger"]
        assert (asset / "agentledger" / "handlers" / "api.py").is_file()
        assert [name for name in HOST_ONLY_SUBPACKAGES if (asset / "agentledger" / name).exists()] == []


def _assert_the_demo_recovered_from_every_injected_failure(stdout: str) -> None:
    """`agentledger demo`, as `make demo` runs it: every failure the workflow exists for, ending in
    one JSON summary line. Its run is also the metrics scenario: a resume, a stale plan and a
    suppressed duplicate, asserted on the metrics the handlers emitted. (The installed wheel's demo
    is the one run: the same code as the checkout's, started as a user starts it.)"""
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["status"] == "complete"
    assert set(summary["stages"].values()) == {"complete"}
    expected = {"plan.json", "changes.diff", "test-output.txt", "summary.json", "generation.json"}
    assert expected <= set(summary["artifacts"])
    # Pynguin's tests, through the filters: at least one kept, and they add coverage.
    assert 1 <= summary["tests_kept"] <= summary["tests_generated"] and summary["coverage_gained"] > 0
    assert summary["mutants_killed"] > 0 and summary["mutation_score_gained"] > 0  # each kept test kills one
    assert summary["interruptions"] == 2 and summary["resumes"] == 1
    assert summary["stale_plans_rejected"] == 1
    # Two principals: the one that asked may not approve; the reviewer did.
    assert summary["requested_by"].endswith(":user/agentledger-requester")
    assert summary["approved_by"].endswith(":user/agentledger-reviewer")
    assert summary["self_approvals_refused"] == 1
    assert "refused with HTTP 403" in stdout and "separation of duties" in stdout
    assert summary["pull_requests_at_receiver"] == 1 and summary["pull_request"].endswith("/pull/1")
    assert summary["tickets_at_receiver"] == 1
    assert summary["duplicated_side_effects"] == 0
    assert summary["duplicates_suppressed"] >= 1
    assert summary["recovery_rate"] == 1.0
    assert summary["time_to_handoff_s"] is not None and summary["time_to_handoff_s"] >= 0
    emitted = summary["metrics"]  # what the handlers emitted as EMF, read back from their log groups
    assert (emitted["runs_started"], emitted["runs_resumed"], emitted["runs_recovered"]) == (1, 1, 1)
    assert emitted["stale_plans_rejected"] == 1
    assert emitted["duplicates_suppressed"] == 1 and emitted["duplicated_side_effects"] == 0
    assert emitted["runs_handed_off"] == 1 and emitted["time_to_handoff_s"]["count"] == 1
    assert emitted["review_wait_s"]["count"] == 1
    assert set(emitted["stage_duration_s"]) == {"inspect", "plan", "execute", "verify", "await_review", "complete"}
    assert "refused with HTTP 409" in stdout and "textkit/slug.py" in stdout
    assert "Complete: inspect, plan, execute, verify" in stdout
