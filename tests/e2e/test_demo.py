"""`agentledger demo` as `make demo` runs it: every failure the workflow exists for, ending in
one JSON summary line. Its run is also the metrics scenario: a resume, a stale plan and a
suppressed duplicate, asserted on the metrics the handlers emitted."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.conftest import CLI_COMMAND, CLI_ENVIRONMENT, PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("demo")]


def test_demo_recovers_from_every_injected_failure_and_summarizes_in_json():
    finished = subprocess.run([*CLI_COMMAND, "demo"], cwd=PROJECT_ROOT, env=CLI_ENVIRONMENT,
                              capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    summary = json.loads(finished.stdout.strip().splitlines()[-1])
    assert summary["status"] == "complete"
    assert set(summary["stages"].values()) == {"complete"}
    expected = {"plan.json", "changes.diff", "test-output.txt", "summary.json", "generation.json"}
    assert expected <= set(summary["artifacts"])
    # Pynguin's tests, through the filters: at least one kept, and they add coverage.
    assert 1 <= summary["tests_kept"] <= summary["tests_generated"] and summary["coverage_gained"] > 0
    assert summary["interruptions"] == 2 and summary["resumes"] == 1
    assert summary["stale_plans_rejected"] == 1
    # Two principals: the one that asked may not approve; the reviewer did.
    assert summary["requested_by"].endswith(":user/agentledger-requester")
    assert summary["approved_by"].endswith(":user/agentledger-reviewer")
    assert summary["self_approvals_refused"] == 1
    assert "refused with HTTP 403" in finished.stdout and "separation of duties" in finished.stdout
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
    assert "refused with HTTP 409" in finished.stdout and "textkit/slug.py" in finished.stdout
    assert "Complete: inspect, plan, execute, verify" in finished.stdout
