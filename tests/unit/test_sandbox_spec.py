"""What a local build's sandbox is made of, as bubblewrap is told it (nothing is started here): the
one interpreter tree bound from the hidden home, a PATH without the home's other toolchains, the
build's name in /etc/passwd readable, the seccomp filter, the kit's few capabilities, and errors
that name none of this machine's paths."""
from __future__ import annotations

import sys
from pathlib import Path

from agentledger.local.sandbox import (
    KIT_CAPABILITIES,
    Mount,
    SandboxSpec,
    _bwrap_arguments,
    interpreter_mounts,
    sandbox_path,
    without_paths,
)

BASE = Path(sys.base_prefix).resolve()


class _Room:
    """What the arguments read of a build's room: where its source directory is."""

    source = Path("/tmp/agentledger-builds/build-x/src")


def test_only_the_interpreters_own_tree_is_bound_from_the_hidden_home() -> None:
    assert interpreter_mounts(BASE.parent) == (Mount(BASE, BASE, writable=False),)
    assert interpreter_mounts(Path("/nowhere-near")) == ()


def test_a_builds_path_runs_serves_interpreter_first_and_nothing_under_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = sandbox_path(f"{home}/.cargo/bin:{home}/.pyenv/shims:/usr/local/bin:/usr/bin:relative", home)
    assert path.split(":") == [str(BASE / "bin"), "/usr/local/bin", "/usr/bin"]


def test_bubblewrap_is_told_the_filter_the_files_and_the_kits_capabilities_alone() -> None:
    spec = SandboxSpec(room=_Room(), home=Path("/root"), hidden=(Path("/var/tmp/x/cache"),),  # type: ignore[arg-type]
                       toolchain=(), tmp_bytes=1 << 20, limits=(), seccomp=b"filter",
                       files=(("/etc/passwd", b"root:x:0:0::/root:/bin/sh\n"),))
    arguments = _bwrap_arguments(spec, [], info_fd=3, own_network=True, data=[7, 8])
    assert arguments[arguments.index("--seccomp") + 1] == "7"
    at = arguments.index("--ro-bind-data")
    assert arguments[at - 2:at + 3] == ["--perms", "0644", "--ro-bind-data", "8", "/etc/passwd"]
    added = [arguments[i + 1] for i, argument in enumerate(arguments) if argument == "--cap-add"]
    assert added == list(KIT_CAPABILITIES) and "CAP_SYS_ADMIN" not in added
    hidden = arguments.index("/var/tmp/x/cache")
    assert arguments[hidden - 5:hidden] == ["--perms", "0700", "--size", str(1 << 20), "--tmpfs"]


def test_a_sandboxs_error_names_none_of_this_machines_paths() -> None:
    said = without_paths("cannot mount /tmp/agentledger-builds/build-x/src: mount: /root/.cache/x: No such file")
    assert said == "cannot mount <path>: mount: <path>: No such file"
    assert without_paths("exit status 1 in 0.5 s (build.log)") == "exit status 1 in 0.5 s (build.log)"
