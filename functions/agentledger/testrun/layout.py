"""The buildspec every test build runs, and how long a build may take. The names the build and
the orchestrator share are the kit's (agentledger/buildkit/layout.py)."""
from __future__ import annotations

from typing import Any

from agentledger.buildkit.layout import (
    CACHE_VARIABLE,
    CONTROL_DIR,
    INPUT_URL_VARIABLE,
    TOOLS_DIR,
    VENVS_DIR,
)

CACHE_PATH_ON_CODEBUILD = "/root/.cache/agentledger"
KIT_COMMAND = f"python3 -I {CONTROL_DIR}"

BUILDSPEC: dict[str, Any] = {
    "version": "0.2",
    "env": {"shell": "bash", "variables": {CACHE_VARIABLE: CACHE_PATH_ON_CODEBUILD}},
    "phases": {
        # Before any repository command runs: the input, the build's directories, and the tools a
        # generation build needs (a host that can, the local sandbox, lets only this phase write the
        # tools' cache).
        "install": {"commands": [
            f'curl --fail --silent --show-error --retry 3 "${INPUT_URL_VARIABLE}" | tar -xzf -',
            f"{KIT_COMMAND} prepare",
        ]},
        # Two phases, so that a host that can (the local sandbox) lets the install write its cache
        # entry and the tests read the cache only.
        "pre_build": {"commands": [f"{KIT_COMMAND} install"]},
        "build": {"commands": [f"{KIT_COMMAND} test"]},
        "post_build": {"commands": [f"{KIT_COMMAND} upload"]},
    },
    # The virtualenvs (an entry per repository and dependencies) and agentledger's own tools; the
    # package managers' downloads are each build's own, never kept for another repository's build.
    "cache": {"paths": [f"{CACHE_PATH_ON_CODEBUILD}/{directory}/**/*" for directory in (VENVS_DIR, TOOLS_DIR)]},
}


def output_grant_seconds(build_timeout_minutes: int) -> int:
    """How long a build's output grant stays valid: the build's timeout and an hour queued
    before it starts."""
    return build_timeout_minutes * 60 + 3600


# The commands of a generation build beside its runs with the suite, each bounded by the test
# timeout: the installs of the tools, of the dependencies (a venv, then the commands) and of the
# project; collection, the runs alone (one session), coverage without the candidates and with the
# kept ones and their probes, the findings.
GENERATION_COMMANDS_BESIDE_RUNS = 12


def build_timeout_minutes(test_timeout_s: int, generation_s: int | None = None, runs: int = 0) -> int:
    """Install, the project's install and the tests each get the configured timeout; a generation
    build gets its search budget and every command of its filters too (`runs` runs with the suite);
    plus a margin for fetching and uploading, within CodeBuild's 5..2160 minutes."""
    commands = GENERATION_COMMANDS_BESIDE_RUNS + runs
    seconds = 3 * test_timeout_s if generation_s is None else commands * test_timeout_s + generation_s
    return max(5, min(2160, -(-seconds // 60) + 10))
