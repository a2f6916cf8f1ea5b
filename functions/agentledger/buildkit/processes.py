"""The repository's commands as the kit runs them: as a uid of their own, with an environment
built from scratch, their output appended to a log, and killed with everything they started.

The kit runs as root (CodeBuild's container user; the local sandbox's phases too) and the code
under test as another uid: it cannot write the kit, its configuration, its results or the cache
entries of other repositories, nor signal or trace the kit. Where the kit is not root (a plain
subprocess of an unprivileged user), there is no other uid to become and it says so."""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .layout import CODE_UID_VARIABLE

if TYPE_CHECKING:
    from collections.abc import Iterator

DEFAULT_CODE_UID = 65534  # nobody: owns nothing in CodeBuild's image
PR_SET_DUMPABLE = 4  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36


class DriverError(Exception):
    """The kit itself cannot do its job (as opposed to the repository's commands failing)."""


def say(message: str) -> None:
    print(f"agentledger: {message}", flush=True)


@dataclass(frozen=True)
class CodeUser:
    """Who the repository's commands run as; None fields: as the kit itself."""

    uid: int | None
    gid: int | None

    @property
    def separate(self) -> bool:
        return self.uid is not None

    def owns(self, path: Path) -> None:
        """Gives `path` (not what it holds) to the code's uid."""
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)

    @contextlib.contextmanager
    def acting(self) -> Iterator[None]:
        """The kit as the code's uid: what it reads and writes of the code's files, it may only as
        the code could. A link the code left never leads the kit to a file of root's (its own
        files, the build's environment in /proc), and what it writes into the code's directories
        is the code's. Root comes back for what the code's uid may not do (as_root)."""
        if self.uid is None or self.gid is None or os.geteuid() != 0:
            yield
            return
        os.setegid(self.gid)
        os.seteuid(self.uid)
        try:
            yield
        finally:
            os.seteuid(0)
            os.setegid(0)


@contextlib.contextmanager
def as_root() -> Iterator[None]:
    """Root again within CodeUser.acting (whose saved uid is root's): to start a command as the
    code's uid, to write the kit's own files."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0 or os.getuid() != 0:
        yield
        return
    os.seteuid(0)
    os.setegid(0)
    try:
        yield
    finally:
        os.setegid(gid)
        os.seteuid(uid)


def code_user() -> CodeUser:
    if os.geteuid() != 0:
        return CodeUser(None, None)
    configured = os.environ.get(CODE_UID_VARIABLE, "")
    uid = int(configured) if configured.isdigit() else DEFAULT_CODE_UID
    if uid == 0:
        raise DriverError(f"{CODE_UID_VARIABLE} must not be 0: the repository's commands never run as root")
    return CodeUser(uid, uid)


def give_tree(root: Path, uid: int | None, gid: int | None) -> None:
    """Every directory and file under `root` to the owner, links never followed."""
    if uid is None or gid is None:
        return
    for directory, names, files in os.walk(root):
        os.chown(directory, uid, gid, follow_symlinks=False)
        for name in names + files:
            os.chown(Path(directory) / name, uid, gid, follow_symlinks=False)


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # None when the command was killed at its deadline
    duration_s: float
    timed_out: bool

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0


def shell_argv(command: str, environment: dict[str, str]) -> list[str]:
    shell = shutil.which("bash", path=environment.get("PATH")) or "sh"
    return [shell, "-c", command]


def run_logged(argv: list[str], shown_as: str, environment: dict[str, str], cwd: Path,
               log_path: Path, timeout_s: int, user: CodeUser) -> Outcome:
    """Runs one command as `user` with its output appended to the log (a file the command gets as
    its stdout, never a pipe: nothing it leaves running can block the kit on a full one)."""
    with as_root(), log_path.open("ab") as log:
        log.write(f"$ {shown_as}\n".encode("utf-8", "replace"))
        log.flush()
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=str(cwd), env=environment, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   user=user.uid, group=user.gid, extra_groups=None if user.uid is None else [])
        try:
            outcome = finished(process.wait(timeout=timeout_s), started)
        except subprocess.TimeoutExpired:
            outcome = Outcome(exit_code=None, duration_s=seconds_since(started), timed_out=True)
        finally:
            # Also after a normal exit: whatever the command started in the background dies with it,
            # so nothing of the code's is running while the kit reads what it wrote.
            kill_group(process.pid)
            kill_tree(os.getpid(), include_root=False)
            process.wait()
            reap_orphans()
        log.write(f"{footer(outcome, timeout_s)}\n".encode())
    return outcome


def finished(returncode: int, started: float) -> Outcome:
    # A signal death reads as the shell reports it, so the result does not depend on whether
    # bash exec'ed the command or ran it as a child.
    exit_code = 128 - returncode if returncode < 0 else returncode
    return Outcome(exit_code=exit_code, duration_s=seconds_since(started), timed_out=False)


def seconds_since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def become_subreaper() -> None:
    """What a command detaches (double fork, setsid) is re-parented to the kit instead of init,
    so it is still found among the kit's descendants and killed. And the kit is not dumpable: its
    /proc files (the environment, with the build's grants) become readable by root only."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the process group kill is what remains


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, pending = [], list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def kill_tree(root: int, include_root: bool = True) -> None:
    """Every process under `root`: stopped first, so none forks or detaches while the tree is
    walked, then killed. A process group kill misses what a command moved to a session of its own."""
    stopped = set()
    while True:
        fresh = [pid for pid in ([root] if include_root else []) + descendants(root) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            signal_quietly(pid, signal.SIGSTOP)
        stopped.update(fresh)
    for pid in stopped:
        signal_quietly(pid, signal.SIGKILL)


def signal_quietly(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)


def reap_orphans() -> None:
    """As a subreaper the kit inherits what its commands detached; their zombies are its own."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def footer(outcome: Outcome, timeout_s: int) -> str:
    return f"[agentledger: {describe(outcome, timeout_s)}]"


def describe(outcome: Outcome, timeout_s: int) -> str:
    if outcome.timed_out:
        return f"killed after the {timeout_s} s timeout"
    return f"exited {outcome.exit_code} in {outcome.duration_s:.2f} s"
