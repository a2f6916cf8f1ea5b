"""The local test build's sandbox: bubblewrap namespaces, a size-capped build directory, and a
network that reaches the package index and one loopback port (the S3 endpoint), nothing else.

Each phase of a build runs as `(join the build's control groups) nsenter (the room's mount
namespace) bwrap ... prlimit ... bash -c SCRIPT`:
- the room: a tmpfs of `disk_bytes`, mounted in a mount namespace of its own held by one sleeping
  process, so the build directory lasts from phase to phase, bounds every byte written into it,
  and is gone (memory freed) when that process dies, whatever killed the build;
- bwrap as root, without a user namespace: new pid, mount, IPC, UTS and network namespaces; the
  host's root read-only; private /tmp, /dev/shm and home (tmpfs, size-capped); the real home
  hidden but for the interpreter's tree, re-bound read-only; the build directory (and the cache
  mounts the caller names) the only writable paths; no_new_privs and the seccomp filter
  (seccomp.py). The script runs as root with the few capabilities the kit needs to run the
  repository's commands as the build's own uid (which it does) and to own the build's files; the
  build's uid is in the sandbox's /etc/passwd. Without a user namespace a uid is the real one
  (inside a user namespace root would map the build's uid to root outside);
- the pid namespace ends with its first process (bwrap's, killed with its parent), so nothing
  the build forked, daemons included, outlives the phase; the caller waits until the namespace
  holds no process before it goes on;
- a phase with a network runs in a network namespace made for it (held by a process of its own)
  that pasta has finished configuring before bwrap enters it: outbound connections go out through
  the host's stack (the package index), the gateway is not mapped to the host, and the one port
  forwarded from the namespace's loopback to the host's is the S3 endpoint's (-T PORT), every
  other host port (-t/-u/-U none, and -T is not `auto`) is not. A phase without one gets bwrap's
  own empty namespace (a loopback, nothing else).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .seccomp import SeccompUnavailable, build_filter

if TYPE_CHECKING:
    from collections.abc import Sequence

REQUIRED_TOOLS = ("bwrap", "pasta", "nsenter", "unshare", "setpriv", "prlimit")
INSTALL_HINT = ("install bubblewrap and passt as root (`sudo apt-get install -y bubblewrap passt`, or `make "
                "install` run as root) and run `agentledger serve` as root, or pass --unsafe-local-builds to run "
                "builds without a sandbox")
# What the kit, root in the sandbox, may do: become the build's uid, own and clear the build's files,
# end the build's processes. Nothing else: no mount, no module, no raw network, no ptrace of another uid.
KIT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL")
NAMESPACE_EMPTY_TIMEOUT_S = 10.0
SANDBOX_HOSTNAME = "agentledger-build"
# What the sandbox's files are made with, whatever serve's own umask.
SANDBOX_UMASK = 0o022
# The room: a tmpfs for the build directory and the build's log, chowned for the build's uid.
_ROOM_SCRIPT = (
    'mount -t tmpfs -o "size=$2,mode=0755" agentledger-build "$1" && mkdir "$1/src" "$1/cache" && '
    'echo ready && exec sleep 2147483647'
)


class SandboxError(Exception):
    """The sandbox could not be set up (as opposed to the build failing in it)."""




def sandbox_problem() -> str | None:
    """Why builds cannot run sandboxed on this machine, or None when they can."""
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if missing:
        return f"the local build sandbox needs {', '.join(missing)}: {INSTALL_HINT}"
    if os.geteuid() != 0:
        return ("the local build sandbox needs root (to run builds as a uid of their own, to mount their "
                f"size-capped directory and to give them a network of their own): {INSTALL_HINT}")
    try:
        build_filter()
    except SeccompUnavailable as error:
        return f"the local build sandbox needs a seccomp filter: {error}"
    return None


@dataclass(frozen=True)
class Mount:
    source: Path
    target: Path
    writable: bool

    def arguments(self) -> list[str]:
        return ["--bind" if self.writable else "--ro-bind", str(self.source), str(self.target)]


class BuildRoom:
    """The build's directory: `path/src` (the build's working directory) and `path/cache` (its
    private package-manager caches) on a tmpfs of `size_bytes` that only the sandbox's phases and
    this process (through /proc/PID/root) can see. The mount point stays empty on the host."""

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path = path  # an empty directory of this process's, the tmpfs's mount point
        # setpriv --pdeathsig: the holder dies with this process, and the tmpfs with the holder.
        self._holder = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--mount", "--propagation", "private", "--",
             "sh", "-c", _ROOM_SCRIPT, "sh", str(path), str(size_bytes)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self._holder.stdout is not None
        if self._holder.stdout.readline() != b"ready\n":
            error = self._holder.stderr.read().decode(errors="replace") if self._holder.stderr else ""
            self.close()
            raise SandboxError(f"cannot mount the build's directory: {error.strip()}")

    @property
    def source(self) -> Path:
        return self.path / "src"

    @property
    def cache(self) -> Path:
        return self.path / "cache"

    @property
    def mount_namespace(self) -> str:
        return f"/proc/{self._holder.pid}/ns/mnt"

    def host_view(self, inside: Path) -> Path:
        """The path, inside the room, as this process reaches it."""
        return Path(f"/proc/{self._holder.pid}/root") / inside.relative_to("/")

    def close(self) -> None:
        if self._holder.poll() is None:
            self._holder.kill()
        self._holder.wait()
        for stream in (self._holder.stdout, self._holder.stderr):
            if stream is not None:
                stream.close()
        self.path.rmdir()


def interpreter_mounts(home: Path) -> tuple[Mount, ...]:
    """The installation of the interpreter serve runs on, re-bound read-only where it lies under
    the hidden home (pyenv's ~/.pyenv/versions/3.11.7): what builds run Python with, and nothing
    else of the home (no other toolchain, no pyenv shim, no credentials beside it)."""
    prefix = Path(sys.base_prefix).resolve()
    return (Mount(prefix, prefix, writable=False),) if prefix.is_relative_to(home) else ()


def sandbox_path(path_variable: str, home: Path) -> str:
    """PATH as a build sees it: the interpreter's own directory first (the cache's entries are named
    by it), then this machine's directories outside the hidden home."""
    entries = [str(Path(sys.base_prefix).resolve() / "bin")]
    for entry in path_variable.split(os.pathsep):
        if entry and Path(entry).is_absolute() and not Path(entry).is_relative_to(home) and entry not in entries:
            entries.append(entry)
    return os.pathsep.join(entries)


@dataclass(frozen=True)
class SandboxSpec:
    """Everything a phase's sandbox is made of besides its command."""
    room: BuildRoom
    home: Path  # hidden
    hidden: tuple[Path, ...]  # also hidden (serve's credentials directory, the cache's host path)
    toolchain: tuple[Mount, ...]
    tmp_bytes: int
    limits: tuple[str, ...]  # the command that applies the limits (nice, prlimit) to the script
    seccomp: bytes  # the compiled filter (seccomp.py)
    files: tuple[tuple[str, bytes], ...] = ()  # files the sandbox sees instead of the host's (/etc/passwd)
    prefix: tuple[str, ...] = ()  # what starts the phase (joining the build's control groups)


class SandboxedProcess:
    """One phase's sandbox, started: its process (bwrap), and, when it has a network, the network
    namespace it runs in (held by a process of its own) with pasta attached."""

    def __init__(self, spec: SandboxSpec, script: str, environment: dict[str, str], mounts: Sequence[Mount],
                 forwarded_port: int | None, network: bool, stdout: IO[bytes] | int) -> None:
        self.network: _Network | None = None
        self.pid_namespace: str | None = None
        info_read, info_write = os.pipe()
        data = [_data_descriptor(content) for content in (spec.seccomp, *(content for _, content in spec.files))]
        try:
            # The namespace is made and configured by pasta before bwrap enters it: bwrap's own
            # loopback setup of a namespace pasta is configuring fails now and then
            # (`loopback: Failed RTM_NEWADDR`), and bwrap sets up no loopback in one it enters.
            self.network = _Network(forwarded_port) if network else None
            entered = [f"--net={self.network.namespace}"] if self.network else []
            argv = [*spec.prefix, "nsenter", f"--mount={spec.room.mount_namespace}", *entered, "--",
                    *_bwrap_arguments(spec, mounts, info_write, own_network=not network, data=data),
                    *spec.limits, "bash", "-c", script]
            # The environment reaches the command by inheritance, never as arguments: bwrap's
            # command line is readable in the namespace (/proc/1/cmdline), its environment is not.
            self.process = subprocess.Popen(argv, env=environment, stdin=subprocess.DEVNULL, stdout=stdout,
                                            stderr=subprocess.STDOUT, pass_fds=(info_write, *data),
                                            start_new_session=True, umask=SANDBOX_UMASK)
        except BaseException:
            os.close(info_read)
            if self.network is not None:
                self.network.close()
            raise
        finally:
            for descriptor in (info_write, *data):
                os.close(descriptor)
        try:
            info = _read_info(info_read)
            self.pid_namespace = f"pid:[{info['pid-namespace']}]"
        except (OSError, ValueError, KeyError, SandboxError) as error:
            self.kill()
            raise SandboxError(f"bwrap ended (exit {self.process.returncode}) before the command started: "
                                    f"{error}") from None
        finally:
            os.close(info_read)

    def wait(self, timeout_s: float) -> int:
        return self.process.wait(timeout=timeout_s)

    def kill(self) -> None:
        """bwrap dies, its namespace's first process with it (--die-with-parent), and the kernel
        kills the rest of the namespace; then the network goes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.pid_namespace is not None:
            _wait_until_empty(self.pid_namespace)
        if self.network is not None:
            self.network.close()


class _Network:
    """A network namespace held by a sleeping process (killed with this one), with pasta attached
    and done configuring it."""

    def __init__(self, forwarded_port: int | None) -> None:
        self._holder = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--net", "--", "sh", "-c",
             "echo ready && exec sleep 2147483647"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pasta: subprocess.Popen[bytes] | None = None
        assert self._holder.stdout is not None
        if self._holder.stdout.readline() != b"ready\n":
            error = self._holder.stderr.read().decode(errors="replace") if self._holder.stderr else ""
            self.close()
            raise SandboxError(f"cannot make the build's network namespace: {error.strip()[-300:]}")
        try:
            self.pasta = _attach_pasta(self.namespace, forwarded_port)
        except SandboxError:
            self.close()
            raise

    @property
    def namespace(self) -> str:
        return f"/proc/{self._holder.pid}/ns/net"

    def close(self) -> None:
        for process in (self.pasta, self._holder):
            if process is not None:
                if process.poll() is None:
                    process.kill()
                process.wait()
        for stream in (self._holder.stdout, self._holder.stderr):
            if stream is not None:
                stream.close()


def without_paths(message: str) -> str:
    """A sandbox's error as a build's record may tell it: this machine's paths left out."""
    return re.sub(r"(?<![\w.])/[^\s:'\"]+", "<path>", message)


def _data_descriptor(content: bytes) -> int:
    """A pipe holding `content`, its read end for bwrap (a filter or a file is a few kilobytes, well
    within a pipe's buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, content)
    finally:
        os.close(write)
    return read


def _bwrap_arguments(spec: SandboxSpec, mounts: Sequence[Mount], info_fd: int, own_network: bool,
                     data: Sequence[int]) -> list[str]:
    tmp = str(spec.tmp_bytes)
    private = (Path("/tmp"), spec.home, *spec.hidden)
    arguments = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                 "--perms", "1777", "--size", tmp, "--tmpfs", "/dev/shm"]
    for directory in (Path("/tmp"), spec.home):
        arguments += ["--perms", "1777", "--size", tmp, "--tmpfs", str(directory)]
    for directory in spec.hidden:  # empty, and closed to the build's uid
        arguments += _parents(directory, (Path("/tmp"), spec.home))
        arguments += ["--perms", "0700", "--size", tmp, "--tmpfs", str(directory)]
    every = (*spec.toolchain, Mount(spec.room.source, spec.room.source, writable=True), *mounts)
    for mount in every:
        arguments += _parents(mount.target, private)
        arguments += mount.arguments()
    seccomp, *files = data
    for (path, _), descriptor in zip(spec.files, files, strict=True):
        arguments += ["--perms", "0644", "--ro-bind-data", str(descriptor), path]
    # Without a network of its own, the phase runs in the network namespace it was started in,
    # which the caller made for it.
    unshare_net = ["--unshare-net"] if own_network else []
    capabilities = [argument for capability in KIT_CAPABILITIES for argument in ("--cap-add", capability)]
    return [*arguments,
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", *unshare_net, "--unshare-cgroup-try",
            "--hostname", SANDBOX_HOSTNAME, "--die-with-parent", "--new-session", "--chdir", str(spec.room.source),
            *capabilities, "--seccomp", str(seccomp), "--info-fd", str(info_fd), "--"]


def _parents(target: Path, private: Sequence[Path]) -> list[str]:
    """The directories between a private tmpfs and a mount point in it, made traversable: bwrap
    would make them 0700 root's, which uid 65534 cannot enter."""
    base = next((directory for directory in private if target.is_relative_to(directory)), None)
    if base is None:
        return []
    arguments: list[str] = []
    for parent in reversed(target.parents):
        if parent.is_relative_to(base) and parent != base:
            arguments += ["--perms", "0755", "--dir", str(parent)]
    return arguments


def _read_info(descriptor: int) -> dict[str, object]:
    data = b""
    while True:
        chunk = os.read(descriptor, 4096)
        if not chunk:
            raise SandboxError(f"bwrap did not start the sandbox: {data.decode(errors='replace')}")
        data += chunk
        try:
            return json.loads(data)
        except ValueError:
            continue


def _attach_pasta(network_namespace: str, forwarded_port: int | None) -> subprocess.Popen[bytes]:
    """pasta in the foreground on the sandbox's network namespace; its pid file (a pipe) is
    written once the interface is configured, which is when the command may start."""
    namespace = os.open(network_namespace, os.O_RDONLY)
    ready_read, ready_write = os.pipe()
    try:
        pasta = subprocess.Popen(
            ["pasta", "--foreground", "--quiet", "--runas", "0", "--config-net", "--no-map-gw",
             "--tcp-ports", "none", "--udp-ports", "none", "--udp-ns", "none",
             "--tcp-ns", str(forwarded_port) if forwarded_port else "none",
             "--pid", f"/proc/self/fd/{ready_write}",
             "--netns", f"/proc/self/fd/{namespace}", "--netns-only"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(namespace, ready_write))
    finally:
        os.close(namespace)
        os.close(ready_write)
    try:
        ready = os.read(ready_read, 64)
    finally:
        os.close(ready_read)
    if not ready:
        pasta.kill()
        pasta.wait()
        error = pasta.stderr.read().decode(errors="replace") if pasta.stderr else ""
        raise SandboxError(f"pasta did not give the build a network: {error.strip()[-300:]}")
    return pasta


def _wait_until_empty(pid_namespace: str) -> None:
    """The kernel kills a pid namespace's processes when its first one dies, but not at once:
    wait (killing stragglers) until /proc shows none in it."""
    deadline = time.monotonic() + NAMESPACE_EMPTY_TIMEOUT_S
    while True:
        left = processes_in(pid_namespace)
        if not left:
            return
        if time.monotonic() > deadline:
            raise SandboxError(f"processes {left} of {pid_namespace} outlived their namespace")
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def processes_in(pid_namespace: str) -> list[int]:
    """The live processes of the namespace. A zombie is left out: it runs nothing, and the
    namespace's first process, once dead, waits as one until the host's init reaps it (a second
    or more here), which is not the build's to wait for."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if str(Path(entry.path, "ns", "pid").readlink()) == pid_namespace and not _dead(entry.name):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile
    return found


def _dead(pid: str) -> bool:
    return Path("/proc", pid, "stat").read_bytes().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
