"""Stopping the local runtime leaves the process as starting it found it: the environment, the
output streams, every member of moto's that moto_seams replaces, the crash injector, the log level
and the import path."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import boto3
import pytest

from agentledger import faults
from agentledger.local.moto_seams import SEAMS
from agentledger.local.runtime import LocalRuntime

pytestmark = pytest.mark.integration
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def process_state() -> dict[str, Any]:
    """What LocalRuntime.start() changes, as objects compared by identity or by value."""
    return {
        "boto3.DEFAULT_SESSION": boto3.DEFAULT_SESSION,
        "os.environ type": type(os.environ),
        "os.environ": dict(os.environ),
        "sys.stdout": sys.stdout,
        "sys.stderr": sys.stderr,
        "sys.path": list(sys.path),
        "moto.stepfunctions log level": logging.getLogger("moto.stepfunctions").level,
        "agentledger.faults._installed": faults._installed,
        **{str(seam): vars(seam.owner)[seam.name] for seam in SEAMS},
    }


def changed_by_a_runtime() -> dict[str, list[str]]:
    """Start a runtime, serve one request through it, stop it: what differs from before, as
    [before, after]."""
    before = process_state()
    runtime = LocalRuntime(workspace_root=Path(tempfile.mkdtemp())).start()
    assert runtime.call_api("GET", "/runs").status == 200
    runtime.stop()
    after = process_state()
    return {name: [repr(before[name]), repr(after[name])] for name in before
            if not (before[name] is after[name] or before[name] == after[name])}


def test_stopping_the_runtime_undoes_every_change_starting_it_made():
    # Its own process: the session runtime may have patched this one already.
    finished = subprocess.run([sys.executable, "-m", "tests.integration.test_runtime_restores"],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert json.loads(finished.stdout.strip().splitlines()[-1]) == {}


if __name__ == "__main__":
    print(json.dumps(changed_by_a_runtime()))
