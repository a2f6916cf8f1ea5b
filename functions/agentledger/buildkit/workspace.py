"""The build's working directory as the kit sees it: the configuration the orchestrator wrote,
the directories of each party, and the environment the repository's commands get."""
from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .layout import (
    CACHE_VARIABLE,
    CONFIG_FILE,
    HOME_DIR,
    PROJECT_DIR,
    REPORTS_DIR,
    REPOSITORY_DIR,
    RESULTS_DIR,
    RESULTS_VARIABLE,
    SCRATCH_DIR,
    STATE_DIR,
    WORK_DIR,
)
from .processes import CodeUser, DriverError, Outcome, as_root, code_user, run_logged, say, shell_argv

# What the repository's commands get of the build's own environment: no grant, no credential.
INHERITED_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
DEFAULT_CACHE_ROOT = "~/.cache/agentledger"
RAW_OUTPUT_FILE = "output.log"  # in the state directory: every command's output, as it came
INSTALL_RESULT_FILE = "install.json"  # in the state directory: what `install` did, for `test`
FAILURE_RECORD = "failure.txt"  # in the state directory: why a command of the kit's failed


@dataclass(frozen=True)
class Config:
    install: list[str]
    test: str
    timeout_s: int
    junit: list[str]
    jacoco: list[str]
    env: dict[str, str]
    virtualenv: bool
    install_project: bool


CONFIG_TYPES: dict[str, tuple[type, str]] = {
    "install": (list, "a list of strings"),
    "test": (str, "a non-empty string"),
    "timeout_s": (int, "a positive integer"),
    "junit": (list, "a list of strings"),
    "jacoco": (list, "a list of strings"),
    "env": (dict, "a table of names to strings"),
    "virtualenv": (bool, "a boolean"),
    "install_project": (bool, "a boolean"),
}


def load_config(path: Path) -> Config:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DriverError(f"cannot read {CONFIG_FILE}: {error}") from error
    if not isinstance(document, dict):
        raise DriverError(f"{CONFIG_FILE} is not a JSON object")
    defaults: dict[str, Any] = {"install": [], "test": "", "timeout_s": 0, "junit": [], "jacoco": [], "env": {},
                                "virtualenv": False, "install_project": False}
    values = {name: document.get(name, default) for name, default in defaults.items()}
    problems = [f"{name} must be {expected}" for name, (kind, expected) in CONFIG_TYPES.items()
                if not _is(values[name], kind)]
    if problems:
        raise DriverError(f"invalid {CONFIG_FILE}: {'; '.join(problems)}")
    return Config(**values)


def _is(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if kind is str:
        return isinstance(value, str) and bool(value)
    if kind is dict:
        return isinstance(value, dict) and is_string_list(list(value.values()))
    return is_string_list(value)


def is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True)
class Workspace:
    """The build's working directory, with absolute paths, and who the repository's commands run as."""

    root: Path
    config: Config
    environment: dict[str, str]  # the repository's commands'
    user: CodeUser

    @property
    def repository(self) -> Path:
        return self.root / REPOSITORY_DIR

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def results(self) -> Path:
        return self.root / RESULTS_DIR

    @property
    def scratch(self) -> Path:
        return self.root / SCRATCH_DIR

    @property
    def home(self) -> Path:
        return self.root / HOME_DIR

    @property
    def reports(self) -> Path:
        return self.root / REPORTS_DIR

    @property
    def work(self) -> Path:
        return self.root / WORK_DIR

    @property
    def project(self) -> Path:
        return self.root / PROJECT_DIR

    @property
    def log(self) -> Path:
        return self.state / RAW_OUTPUT_FILE

    def log_size(self) -> int:
        with as_root():
            return self.log.stat().st_size

    def output_since(self, start: int, limit_bytes: int) -> str:
        """What the commands printed since the log held `start` bytes, at most its last `limit_bytes`
        (the kit's own log, root's alone, read as root)."""
        with as_root(), self.log.open("rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(start, size - limit_bytes))
            return log.read().decode("utf-8", errors="replace")

    def run(self, command: str, environment: dict[str, str]) -> Outcome:
        """One of the repository's commands, in the repository, as the code's uid."""
        return self.run_argv(shell_argv(command, environment), command, environment)

    def run_argv(self, argv: list[str], shown_as: str, environment: dict[str, str], cwd: Path | None = None,
                 timeout_s: int | None = None) -> Outcome:
        return run_logged(argv, shown_as, environment, cwd or self.repository, self.log,
                          timeout_s or self.config.timeout_s, self.user)


def open_workspace(root: Path) -> Workspace:
    config = load_config(root / CONFIG_FILE)
    return Workspace(root=root, config=config, environment=command_environment(config, root), user=code_user())


def command_environment(config: Config, root: Path) -> dict[str, str]:
    """From scratch: the build's own variables (the output grant, AWS credentials, CODEBUILD_*)
    never reach code from the repository. Its home and package managers' downloads are this
    build's alone, never shared with another repository's build; a repository that declares its
    own locations keeps them."""
    environment = {name: os.environ[name] for name in INHERITED_VARIABLES if name in os.environ}
    home = root / HOME_DIR
    environment.update({"HOME": str(home), "PIP_CACHE_DIR": str(home / ".cache" / "pip"),
                        "npm_config_cache": str(home / ".npm"),
                        "MAVEN_OPTS": f"-Dmaven.repo.local={home / '.m2' / 'repository'}"})
    environment.update(config.env)
    environment[RESULTS_VARIABLE] = str(root / REPORTS_DIR)
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def inside_venv(environment: dict[str, str], venv: Path) -> dict[str, str]:
    bin_dir = str(venv / "bin")
    path = environment.get("PATH")
    return {**environment, "PATH": f"{bin_dir}{os.pathsep}{path}" if path else bin_dir,
            "VIRTUAL_ENV": str(venv)}


def import_path(workspace: Workspace) -> str:
    """The working copy first (it shadows the copy of the project the cached venv holds), then
    the project as this build installed it from the tree (its metadata, its generated files)."""
    roots = [workspace.repository, workspace.repository / "src", workspace.project]
    return os.pathsep.join(str(root) for root in roots if root.is_dir())


def working_copy_roots(workspace: Workspace) -> list[Path]:
    return [root for root in (workspace.repository, workspace.repository / "src") if root.is_dir()]


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_VARIABLE) or Path(DEFAULT_CACHE_ROOT).expanduser())


def interpreter() -> str:
    """What a virtualenv made by this build is made from: one cached with another is not reused."""
    return sys.version


# --- what the repository's code wrote --------------------------------------------------------------
# Read by the kit only once every process of the code's is dead, so nothing changes under it;
# a link, a device or a path outside `within` is never followed: the kit could read what the
# code's uid cannot.

def contained_regular_file(within: Path, candidate: Path) -> Path | None:
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not resolved.is_relative_to(within.resolve()) or not stat.S_ISREG(resolved.stat().st_mode):
        return None
    return resolved


def read_untrusted(path: Path, within: Path, limit_bytes: int) -> bytes | None:
    """The file's bytes, or None when it is missing, outside `within`, not a regular file or larger
    than the limit."""
    resolved = contained_regular_file(within, path)
    if resolved is None or resolved.stat().st_size > limit_bytes:
        return None
    return resolved.read_bytes()


def glob_inside(within: Path, pattern: str, kind: str) -> list[Path]:
    """The regular files the pattern matches inside `within`, resolved; never a symlink and never a
    path outside it."""
    if not pattern or Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        say(f"ignoring {kind} glob {pattern!r}: not a pattern inside the repository")
        return []
    try:
        candidates = sorted(within.glob(pattern))
    except ValueError as error:
        say(f"ignoring {kind} glob {pattern!r}: {error}")
        return []
    matches = []
    for match in candidates:
        resolved = None if match.is_symlink() else contained_regular_file(within, match)
        if resolved is not None:
            matches.append(resolved)
    return matches
