"""A control group per local build (cgroup v1's memory and pids controllers, as this machine has
them): one build's processes and memory count against its own limits, never against another's.

Each is made under serve's own group, and a phase's first process joins it before it starts
anything (so all it forks are in it from their first instruction). Where serve cannot make them
(no v1 hierarchy mounted, a hierarchy it may not write, cgroup v2 alone), builds run without them
and serve says so once: the uid of its own (codebuild.py) still keeps their process counts apart,
and prlimit bounds each process's address space."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")
GROUP_PREFIX = "agentledger-build-"
EMPTY_TIMEOUT_S = 10.0
# The first thing a phase runs: it writes its own pid into each group's cgroup.procs, then
# becomes the phase's command.
_JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class BuildGroups:
    """One build's groups, one per controller."""

    directories: tuple[Path, ...]

    def join_prefix(self) -> list[str]:
        """The command that runs the rest of a phase's command line inside the groups."""
        return ["sh", "-c", _JOIN_SCRIPT, "sh", *(str(d / "cgroup.procs") for d in self.directories), "--"]

    def remove(self) -> None:
        """Once every process of the build has ended (the kernel refuses to remove a group that
        holds one; a process may take a moment to leave after it is killed)."""
        deadline = time.monotonic() + EMPTY_TIMEOUT_S
        for directory in self.directories:
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        print(f"agentledger: could not remove the build's control group {directory.name}",
                              file=sys.stderr, flush=True)
                        break
                    time.sleep(0.05)


class BuildGroupFactory:
    """Makes a build's groups under this process's own, or says why it cannot."""

    def __init__(self) -> None:
        self.parents = {controller: _own_group(controller) for controller in CONTROLLERS}
        self.problem = self._probe()

    def _probe(self) -> str | None:
        missing = [controller for controller, parent in self.parents.items() if parent is None]
        if missing:
            return f"no cgroup v1 hierarchy for {', '.join(missing)} is mounted under {CGROUP_ROOT}"
        try:
            groups = self.make("probe", memory_bytes=1 << 30, processes=16)
        except OSError as error:
            return f"cannot make a control group: {error.strerror or error}"
        groups.remove()
        return None

    def make(self, name: str, memory_bytes: int, processes: int) -> BuildGroups:
        settings = {"memory": {"memory.limit_in_bytes": memory_bytes}, "pids": {"pids.max": processes}}
        made: list[Path] = []
        try:
            for controller, parent in self.parents.items():
                assert parent is not None  # _probe said so
                directory = parent / f"{GROUP_PREFIX}{name}"
                directory.mkdir()
                made.append(directory)
                for setting, value in settings[controller].items():
                    (directory / setting).write_text(f"{value}\n")
        except OSError:
            BuildGroups(tuple(made)).remove()
            raise
        return BuildGroups(tuple(made))


def _own_group(controller: str) -> Path | None:
    """This process's group of the controller, as /proc/self/cgroup names it (v1: `4:memory:/a/b`)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                directory = CGROUP_ROOT / controller / path.lstrip("/")
                if directory.is_dir() and os.access(directory, os.W_OK):
                    return directory
    return None
