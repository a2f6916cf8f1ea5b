"""What the orchestrator and the build agree on: the input tarball's layout, the build's
variables and the buildspec. The driver (a standalone script inside the build) repeats the
names it needs; tests/unit/testrun/test_layout.py checks that the copy agrees."""
from __future__ import annotations

from typing import Any

# Inside the input tarball (and the build's working directory after extraction).
REPOSITORY_DIR = "repository"  # the source tree with the generated tests written in
CONTROL_DIR = "agentledger"  # trusted files the orchestrator adds: the driver and the configuration
DRIVER_FILE = f"{CONTROL_DIR}/driver.py"
CONFIG_FILE = f"{CONTROL_DIR}/config.json"
# A build that writes tests (the execute stage's) also carries these: the generation module the
# driver imports, the request it reads, and the directory put on the project's PYTHONPATH (a
# pytest plugin, the coverage probe, a sitecustomize that appends the tools' paths).
GENERATION_FILE = f"{CONTROL_DIR}/generation.py"
JAVA_GENERATION_FILE = f"{CONTROL_DIR}/generation_java.py"  # its filters for a Maven project's JUnit classes
GENERATION_REQUEST_FILE = f"{CONTROL_DIR}/generation.json"
BUILD_SITE_DIR = f"{CONTROL_DIR}/site"
RESULTS_DIR = f"{CONTROL_DIR}/results"  # what the driver writes and uploads
# Inside the results (and the output tarball).
RESULT_FILE = "result.json"
GENERATION_RESULT_FILE = "generation.json"
OUTPUT_FILE = "output.txt"
JUNIT_DIR = "junit"
COVERAGE_DIR = "coverage"  # JaCoCo XML reports the config's `jacoco` globs matched

# Variables the orchestrator sets on each build. None of them reaches the install or test
# commands: the driver starts those with an environment it builds itself.
INPUT_URL_VARIABLE = "AGENTLEDGER_INPUT_URL"  # presigned GET of this test run's input tarball
TEST_RUN_VARIABLE = "AGENTLEDGER_TEST_RUN"  # "<run id>/<input digest>", to find the build again
# The presigned POST (JSON: url, fields) for the test run's outputs, for the driver's upload. The
# grant can write the build's results, and CodeBuild returns a build's plaintext variables to
# whoever may call BatchGetBuilds (ReadOnlyAccess may), so this is a PARAMETER_STORE variable: the
# build's metadata holds a SecureString parameter's name, which only the build role can decrypt.
OUTPUT_GRANT_VARIABLE = "AGENTLEDGER_OUTPUT_GRANT"
# Declared by the build host: where dependency caches live (a CodeBuild local cache path on AWS).
CACHE_VARIABLE = "AGENTLEDGER_CACHE"
# Set by the driver for the test command: where to write JUnit XML that it should collect.
RESULTS_VARIABLE = "AGENTLEDGER_RESULTS"

OUTPUT_LIMIT_BYTES = 1 << 20  # the tail of install + test output that is kept
OUTPUT_ARCHIVE_LIMIT_BYTES = 32 << 20  # the most the output grant accepts
CACHE_PATH_ON_CODEBUILD = "/root/.cache/agentledger"

BUILDSPEC: dict[str, Any] = {
    "version": "0.2",
    "env": {"shell": "bash", "variables": {CACHE_VARIABLE: CACHE_PATH_ON_CODEBUILD}},
    "phases": {
        # The tools a generation build needs are installed here, before any repository command runs:
        # a host that can (the local sandbox) lets only this phase write the tools' cache.
        "install": {"commands": [
            f'curl --fail --silent --show-error --retry 3 "${INPUT_URL_VARIABLE}" | tar -xzf -',
            f"python3 {DRIVER_FILE} tools",
        ]},
        # Two phases, so that a host that can (the local sandbox) lets the install write its cache
        # entry and the tests read the cache only.
        "pre_build": {"commands": [f"python3 {DRIVER_FILE} install"]},
        "build": {"commands": [f"python3 {DRIVER_FILE} test"]},
        "post_build": {"commands": [f"python3 {DRIVER_FILE} upload"]},
    },
    "cache": {"paths": [f"{CACHE_PATH_ON_CODEBUILD}/**/*"]},
}


def output_grant_seconds(build_timeout_minutes: int) -> int:
    """How long a build's output grant stays valid: the build's timeout and an hour queued
    before it starts."""
    return build_timeout_minutes * 60 + 3600


# The pytest runs of a generation build, each bounded by the test timeout: collection, five runs
# alone, five with the suite, coverage without the candidates and with the kept ones, the
# findings; and the installs of the tools and of the project.
GENERATION_COMMANDS = 16


def build_timeout_minutes(test_timeout_s: int, generation_s: int | None = None) -> int:
    """Install and tests each get the configured timeout; a generation build gets its search
    budget and every command of its filters too; plus a margin for fetching and uploading,
    within CodeBuild's 5..2160 minutes."""
    seconds = 2 * test_timeout_s if generation_s is None else GENERATION_COMMANDS * test_timeout_s + generation_s
    return max(5, min(2160, -(-seconds // 60) + 10))
