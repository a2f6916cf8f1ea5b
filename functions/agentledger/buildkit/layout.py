"""What the orchestrator and the build agree on: the input's layout, the build's directories and
variables. The orchestrator imports it as `agentledger.buildkit.layout`, the build as part of the
kit it carries: one definition for both."""
from __future__ import annotations

# Inside the input tarball (and the build's working directory after extraction).
REPOSITORY_DIR = "repository"  # the source tree, with the generated tests written in
# agentledger's own files: the kit, its configuration and the generation request. Root's in the
# build and read-only to the repository's commands; run as `python3 -I agentledger COMMAND`.
CONTROL_DIR = "agentledger"
KIT_PACKAGE = "buildkit"
KIT_DIR = f"{CONTROL_DIR}/{KIT_PACKAGE}"
KIT_ENTRY_FILE = f"{CONTROL_DIR}/__main__.py"
# What `python3 -I agentledger` runs: the kit's package, found beside it (sys.path[0] is the
# control directory; the working directory and PYTHONPATH are not on the path).
KIT_ENTRY = f"import runpy\nrunpy.run_module({KIT_PACKAGE!r}, run_name='__main__', alter_sys=True)\n"
CONFIG_FILE = f"{CONTROL_DIR}/config.json"
GENERATION_REQUEST_FILE = f"{CONTROL_DIR}/generation.json"  # a build that writes tests carries it
BUILD_SITE_DIR = f"{KIT_DIR}/site"  # put on the project's PYTHONPATH by a generation build

# Made by the kit in the build, beside what was extracted:
STATE_DIR = f"{CONTROL_DIR}/state"  # root's alone: the output log, the install's record, the archive
RESULTS_DIR = f"{CONTROL_DIR}/results"  # root's: what the kit writes and uploads
# The repository's commands write here, and only here besides the repository: their home and
# download caches, the reports they are asked for ($AGENTLEDGER_RESULTS), a generation's scratch,
# and the project as installed for this build.
SCRATCH_DIR = f"{CONTROL_DIR}/scratch"
HOME_DIR = f"{SCRATCH_DIR}/home"
REPORTS_DIR = f"{SCRATCH_DIR}/reports"
WORK_DIR = f"{SCRATCH_DIR}/work"
PROJECT_DIR = f"{SCRATCH_DIR}/project"

# Inside the results (and the output tarball).
RESULT_FILE = "result.json"
GENERATION_RESULT_FILE = "generation.json"
OUTPUT_FILE = "output.txt"
FAILURE_FILE = "failure.txt"  # why a command of the kit's failed, when one did
JUNIT_DIR = "junit"
COVERAGE_DIR = "coverage"  # JaCoCo XML reports the config's `jacoco` globs matched

# Variables the orchestrator sets on each build. None of them reaches the install or test
# commands: the kit starts those with an environment it builds itself.
INPUT_URL_VARIABLE = "AGENTLEDGER_INPUT_URL"  # presigned GET of this test run's input tarball
TEST_RUN_VARIABLE = "AGENTLEDGER_TEST_RUN"  # "<run id>/<input digest>", to find the build again
# The presigned POST (JSON: url, fields) for the test run's outputs, for the upload. The grant can
# write the build's results, and CodeBuild returns a build's plaintext variables to whoever may
# call BatchGetBuilds (ReadOnlyAccess may), so this is a PARAMETER_STORE variable: the build's
# metadata holds a SecureString parameter's name, which only the build role can decrypt.
OUTPUT_GRANT_VARIABLE = "AGENTLEDGER_OUTPUT_GRANT"
# The dependency cache entry this build may use or fill: the orchestrator's digest of the
# repository's identity and everything the install depends on (workflow/builds.py). Absent: the
# build caches nothing.
CACHE_KEY_VARIABLE = "AGENTLEDGER_CACHE_KEY"
# Declared by the build host: where the dependency cache lives (a CodeBuild local cache path).
CACHE_VARIABLE = "AGENTLEDGER_CACHE"
# Declared by the local build host: the uid the repository's commands run as (one per build, so
# one build's processes never count against another's limits). CodeBuild's container is a build's
# own, so there the kit's default serves.
CODE_UID_VARIABLE = "AGENTLEDGER_CODE_UID"
# Set by the kit for the test command: where to write JUnit XML that it should collect.
RESULTS_VARIABLE = "AGENTLEDGER_RESULTS"

# The output grant's second grant (under this key of its JSON), for the build's progress: a small
# JSON document the kit overwrites at each step of a generation build (the step, the module, the
# counts so far), read while the stage waits. Beside the output, at PROGRESS_FILE.
PROGRESS_GRANT_KEY = "progress"
PROGRESS_FILE = "progress.json"
PROGRESS_LIMIT_BYTES = 4096

OUTPUT_LIMIT_BYTES = 1 << 20  # the tail of install + test output that is kept
OUTPUT_ARCHIVE_LIMIT_BYTES = 32 << 20  # the most the output grant accepts

# In the cache: one directory of virtualenvs (an entry per cache key and interpreter), one of
# agentledger's own tools (named by their pins), and the locks that keep two installs of an entry apart.
VENVS_DIR = "venvs"
TOOLS_DIR = "tools"
LOCKS_DIR = "locks"
INSTALLED_MARKER = ".agentledger-installed"
TOOLS_MARKER = ".agentledger-tools-installed"
