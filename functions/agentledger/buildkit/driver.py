"""The kit's commands, as the buildspec runs them in the build's working directory:

    python3 -I agentledger prepare   the build's directories, each its party's; a generation build's tools
    python3 -I agentledger install   the dependencies (into the cached venv on a miss), then the project
    python3 -I agentledger test      the tests (or the generation), results into agentledger/results/
    python3 -I agentledger upload    POST agentledger/results/ as a tarball to the output grant

`-I`: nothing of the working directory or the environment is importable, so no file of the
repository's can stand in for the kit or for pip. Install and test are two commands, run in two
phases, so that a host that can (the local sandbox) gives the install a writable cache entry and
the tests a read-only cache; the tools are installed in the phase before, when no command of the
repository's has run."""
from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from . import generation
from .generation_java import JavaGeneration
from .install import InstallResult, install
from .layout import (
    COVERAGE_DIR,
    FAILURE_FILE,
    GENERATION_REQUEST_FILE,
    GENERATION_RESULT_FILE,
    JUNIT_DIR,
    OUTPUT_FILE,
    RESULT_FILE,
    RESULTS_DIR,
    STATE_DIR,
)
from .processes import DriverError, Outcome, become_subreaper, describe, give_tree, say, seconds_since
from .results import collect_reports, make_private, write_output_tail, write_result
from .upload import ProgressPoster, upload_results
from .workspace import (
    FAILURE_RECORD,
    INSTALL_RESULT_FILE,
    RAW_OUTPUT_FILE,
    Workspace,
    cache_root,
    import_path,
    inside_venv,
    open_workspace,
)

if TYPE_CHECKING:
    from collections.abc import Callable

OUTPUT_ARCHIVE = "output.tar.gz"  # in the state directory


def prepare() -> int:
    """Before any of the repository's commands: the kit's directories root's (its state root's
    alone), the repository and the scratch the code's, and, for a generation build, the tools."""
    root = Path.cwd()
    make_private(root / STATE_DIR)  # first: whatever fails next is recorded there
    become_subreaper()
    workspace = open_workspace(root)
    workspace.log.touch()
    workspace.results.mkdir(exist_ok=True)
    user = workspace.user
    for directory in (workspace.scratch, workspace.home, workspace.reports, workspace.reports / JUNIT_DIR,
                      workspace.reports / COVERAGE_DIR, workspace.work, workspace.project):
        directory.mkdir(parents=True, exist_ok=True)
        user.owns(directory)
    give_tree(workspace.repository, user.uid, user.gid)
    if user.separate:
        reachable(workspace.root)
        reachable(cache_root())
    else:
        say("not root: the repository's commands run as this user, with the kit's files in their reach")
    if (workspace.root / GENERATION_REQUEST_FILE).is_file():
        return generation.install_tools(workspace)
    return 0


def reachable(path: Path) -> None:
    """Every directory down to `path` may be passed through by other users (CodeBuild's /root may
    not), so the code's uid reaches its repository and the cached venvs; nothing becomes listable
    or writable that was not."""
    for directory in [*reversed(path.parents), path]:
        if directory.is_dir():
            mode = directory.stat().st_mode
            if not mode & stat.S_IXOTH:
                directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


def run_install() -> int:
    workspace = open_workspace(Path.cwd())
    become_subreaper()
    result = install(workspace)
    (workspace.state / INSTALL_RESULT_FILE).write_text(json.dumps(asdict(result)) + "\n", encoding="utf-8")
    say(f"wrote {STATE_DIR}/{INSTALL_RESULT_FILE}")
    return 0


def run_generation(workspace: Workspace, venv: Path | None) -> Outcome:
    """The generation and its filters, the kit acting as the code's uid; the result is written
    next to result.json, as root."""
    request = generation.load_request(workspace.root / GENERATION_REQUEST_FILE)
    writer = JavaGeneration if request.language == "java" else generation.Generation
    started = time.monotonic()
    with workspace.user.acting():
        result = writer(workspace, venv, generation.Tools(generation.tools_root()), request,
                        ProgressPoster.from_environment()).run()
    (workspace.results / GENERATION_RESULT_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    say("generation: " + ", ".join(f"{name} {count}" for name, count in result["funnel"].items()))
    return Outcome(exit_code=0, duration_s=seconds_since(started), timed_out=False)


def run_suite() -> int:
    workspace = open_workspace(Path.cwd())
    become_subreaper()
    installed = load_install_result(workspace.state / INSTALL_RESULT_FILE)
    venv = Path(installed.venv) if installed.venv else None
    outcome: Outcome | None
    if not installed.succeeded:
        outcome = None
        say("install failed, not running the tests")
    elif (workspace.root / GENERATION_REQUEST_FILE).is_file():
        outcome = run_generation(workspace, venv)
    else:
        outcome = run_tests(workspace, venv)
    config = workspace.config
    junit_files = collect_reports(workspace, config.junit, "JUnit", JUNIT_DIR)
    say(f"collected {len(junit_files)} JUnit file(s)")
    coverage_files = collect_reports(workspace, config.jacoco, "JaCoCo", COVERAGE_DIR) if config.jacoco else []
    if config.jacoco:
        say(f"collected {len(coverage_files)} JaCoCo report(s)")
    write_output_tail(workspace.log, workspace.results / OUTPUT_FILE)
    write_result(workspace.results, installed, outcome, config.test, junit_files, coverage_files)
    say(f"wrote {RESULTS_DIR}/{RESULT_FILE}")
    return 0


def run_tests(workspace: Workspace, venv: Path | None) -> Outcome:
    say(f"running tests: {workspace.config.test}")
    environment = workspace.environment
    if venv is not None:
        environment = {**inside_venv(environment, venv), "PYTHONPATH": import_path(workspace)}
    outcome = workspace.run(workspace.config.test, environment)
    say(f"tests {describe(outcome, workspace.config.timeout_s)}")
    return outcome


def load_install_result(path: Path) -> InstallResult:
    try:
        return InstallResult(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as error:
        raise DriverError(f"cannot read {STATE_DIR}/{INSTALL_RESULT_FILE} (did `install` run?): {error}") from error


def upload() -> int:
    """What the build has to say, whatever happened before: the output so far and why the kit
    failed, if it did, when no `test` got to write them."""
    root = Path.cwd()
    results, state = root / RESULTS_DIR, root / STATE_DIR
    results.mkdir(parents=True, exist_ok=True)
    failure = state / FAILURE_RECORD
    if failure.is_file():
        (results / FAILURE_FILE).write_bytes(failure.read_bytes()[-4096:])
    if not (results / OUTPUT_FILE).is_file():
        write_output_tail(state / RAW_OUTPUT_FILE, results / OUTPUT_FILE,
                          failure.read_text(encoding="utf-8", errors="replace") if failure.is_file() else None)
    upload_results(results, state / OUTPUT_ARCHIVE)
    return 0


def record_failure(root: Path, message: str) -> None:
    """Kept in the kit's state and appended to the output, so the upload carries it."""
    state = root / STATE_DIR
    if not state.is_dir() or state.is_symlink():
        return
    with (state / FAILURE_RECORD).open("a", encoding="utf-8") as record:
        record.write(f"{message}\n")
    with (state / RAW_OUTPUT_FILE).open("a", encoding="utf-8") as log:
        log.write(f"agentledger: {message}\n")


COMMANDS: dict[str, Callable[[], int]] = {"prepare": prepare, "install": run_install, "test": run_suite,
                                          "upload": upload}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: python3 -I agentledger {'|'.join(COMMANDS)}", file=sys.stderr)
        return 2
    if os.geteuid() == 0:
        os.setgroups([])  # root's supplementary groups are no part of what the kit may touch as the code
    try:
        return COMMANDS[argv[0]]()
    except (DriverError, OSError) as error:
        message = f"{argv[0]} failed: {error}"
        print(f"agentledger: {message}", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):  # the record is a courtesy: the build fails either way
            record_failure(Path.cwd(), message)
        return 1
