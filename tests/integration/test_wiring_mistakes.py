"""A wiring mistake in the stack shows up locally as it would on AWS: the same template is
deployed, so a wrong handler path or a missing environment variable fails the run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _probe(mistake: str) -> dict:
    # Its own process: a second stack cannot share this process's moto with the session stack.
    finished = subprocess.run([sys.executable, "-m", "tests.integration.broken_stack_probe", mistake],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return json.loads(finished.stdout.strip().splitlines()[-1])


def test_a_wrong_handler_path_fails_the_stage_that_uses_it():
    result = _probe("handler")
    assert result["execution"] == "FAILED"
    assert result["run_status"] == "needs_person"
    response = result["handoff"]["details"]["response"]
    assert response["error"] == "Runtime.ImportModuleError"
    assert "handlers.stagez" in response["message"]
    assert result["handoff"]["details"]["attempted"]["stage"] == "plan"


def test_a_missing_environment_variable_fails_the_function_that_needs_it():
    result = _probe("environment")
    assert result["execution"] == "FAILED"
    response = result["handoff"]["details"]["response"]
    assert "LEDGER_TABLE_NAME is not set" in response["message"]
