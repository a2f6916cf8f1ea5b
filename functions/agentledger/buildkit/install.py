"""The install: the repository's dependencies into a virtualenv the cache keeps for this repository
(or one of this build's own), then the project itself from its tree, in every build.

A cache entry is named by the orchestrator's key (the repository's identity and what the install
depends on) and the interpreter: no part of the name comes from the build. The entry is written
only on a miss, by the code's uid, and is root's as soon as the install ends, so no later build's
code can change it; an install that did not finish leaves nothing behind."""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .layout import CACHE_KEY_VARIABLE, INSTALLED_MARKER, LOCKS_DIR, VENVS_DIR
from .processes import Outcome, give_tree, say, seconds_since
from .workspace import Workspace, cache_root, inside_venv, interpreter

ENTRY_NAME_LENGTH = 24
CACHE_KEY = re.compile(r"[0-9a-f]{64}")
PIP_QUIET = ["--no-input", "--disable-pip-version-check"]


def entry_name(cache_key: str, interpreter_version: str, cache: Path) -> str:
    """The cache entry of this key made with this interpreter at this place (a virtualenv works
    only where it was made): what the local build host mounts writable for a miss, and what the
    kit installs into."""
    made = f"{cache_key}\n{interpreter_version}\n{cache}"
    return hashlib.sha256(made.encode()).hexdigest()[:ENTRY_NAME_LENGTH]


@dataclass(frozen=True)
class InstallResult:
    commands: int  # how many install commands ran (none on a cache hit)
    exit_code: int | None
    duration_s: float
    timed_out: bool
    cache_hit: bool | None  # None: nothing is cached
    venv: str | None = None  # where the tests run

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0


def install(workspace: Workspace) -> InstallResult:
    started = time.monotonic()
    key = os.environ.get(CACHE_KEY_VARIABLE, "")
    if not workspace.config.virtualenv:
        say("installing (no cache)" if workspace.config.install else "nothing to install")
        commands, outcome = run_install_commands(workspace, workspace.environment)
        result = install_result(commands, outcome, started, cache_hit=None, venv=None)
    elif CACHE_KEY.fullmatch(key):
        cache = cache_root()
        result = install_into_cached_venv(workspace, cache / VENVS_DIR / entry_name(key, interpreter(), cache))
    else:
        say("no cache key: installing into a virtualenv of this build's own")
        result = install_into_new_venv(workspace, workspace.scratch / "venv", started)
    if result.succeeded and workspace.config.install_project:
        return install_project(workspace, result)
    return result


def install_into_cached_venv(workspace: Workspace, venv: Path) -> InstallResult:
    """Two builds may share the cache: the lock makes one install while the other waits, then
    finds the marker."""
    started = time.monotonic()
    locks = cache_root() / LOCKS_DIR
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{venv.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / INSTALLED_MARKER).exists():
            say(f"dependencies cached (venv {venv.name}), not installing")
            return install_result(0, None, started, cache_hit=True, venv=venv)
        say(f"installing (cache miss for venv {venv.name})")
        result = install_into_new_venv(workspace, venv, started)
        if result.succeeded:
            (venv / INSTALLED_MARKER).touch()
            if workspace.user.separate:
                give_tree(venv, 0, 0)
        else:
            clear_directory(venv)
        return replace(result, cache_hit=False)


def install_into_new_venv(workspace: Workspace, venv: Path, started: float) -> InstallResult:
    clear_directory(venv)  # what a failed or killed install left (the entry may be a mount point)
    workspace.user.owns(venv)
    argv = [sys.executable, "-I", "-m", "venv", str(venv)]
    created = workspace.run_argv(argv, " ".join(argv), workspace.environment, cwd=workspace.home)
    if not created.succeeded:
        return install_result(0, created, started, cache_hit=None, venv=venv)
    commands, outcome = run_install_commands(workspace, inside_venv(workspace.environment, venv))
    return install_result(commands, outcome, started, cache_hit=None, venv=venv)


def install_project(workspace: Workspace, dependencies: InstallResult) -> InstallResult:
    """The project from this build's tree, without its dependencies (the venv has them), into a
    directory of this build's: its build backend runs on the tree in every build, so what it
    generates (a version file from the VCS, say) is there whether the venv came from the cache or
    not, and the metadata is this tree's."""
    started = time.monotonic()
    python = str(Path(dependencies.venv) / "bin" / "python") if dependencies.venv else sys.executable
    argv = [python, "-I", "-m", "pip", "install", *PIP_QUIET, "--no-deps", "--target", str(workspace.project),
            str(workspace.repository)]
    say("installing the project from its tree")
    outcome = workspace.run_argv(argv, " ".join(argv), workspace.environment, cwd=workspace.home)
    return InstallResult(commands=dependencies.commands + 1, exit_code=outcome.exit_code,
                         duration_s=round(dependencies.duration_s + seconds_since(started), 3),
                         timed_out=outcome.timed_out, cache_hit=dependencies.cache_hit, venv=dependencies.venv)


def run_install_commands(workspace: Workspace, environment: dict[str, str]) -> tuple[int, Outcome | None]:
    """Runs the install commands up to the first that fails; returns how many ran and the last
    outcome (None when there was nothing to run)."""
    outcome = None
    for number, command in enumerate(workspace.config.install, start=1):
        say(f"install {number}/{len(workspace.config.install)}: {command}")
        outcome = workspace.run(command, environment)
        if not outcome.succeeded:
            return number, outcome
    return len(workspace.config.install), outcome


def install_result(commands: int, outcome: Outcome | None, started: float, cache_hit: bool | None,
                   venv: Path | None) -> InstallResult:
    return InstallResult(
        commands=commands,
        exit_code=0 if outcome is None else outcome.exit_code,
        duration_s=seconds_since(started),
        timed_out=outcome is not None and outcome.timed_out,
        cache_hit=cache_hit,
        venv=None if venv is None else str(venv),
    )


def clear_directory(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
