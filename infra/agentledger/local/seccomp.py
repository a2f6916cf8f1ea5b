"""The local build sandbox's seccomp filter, compiled by libseccomp (Debian's libseccomp2) for
this machine's architecture: the system calls an escape or a kernel exploit starts with, which
no build needs, fail.

- No new namespace of any kind (unshare, setns, and clone with a namespace flag): the code under
  test cannot become root of a user namespace of its own (`unshare -Ur`), from which much of the
  kernel's attack surface opens. bwrap's own `--disable-userns` needs the sandbox to run in a user
  namespace, where the build's uid would map to root's outside; the filter holds without one.
- clone3 answers ENOSYS, as Docker's default profile does: its flags sit in memory a filter cannot
  read, and the C libraries fall back to clone, whose flags it can.
- The kernel's keyring, eBPF, perf events, userfaultfd and io_uring (ENOSYS: runtimes fall back to
  plain system calls), module loading, kexec, mounting, handle-based opens, swapping, rebooting.
CodeBuild runs a build in a container under Docker's default seccomp profile, which denies the same."""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from functools import cache

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
DENIED = (
    "unshare", "setns", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "mount", "umount2", "pivot_root", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree",
    "mount_setattr", "open_by_handle_at", "swapon", "swapoff", "reboot", "acct", "quotactl",
)
UNSUPPORTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
INSTALL_HINT = "install libseccomp2 (`sudo apt-get install -y libseccomp2`)"


class SeccompUnavailable(Exception):
    """libseccomp cannot be loaded or refused the filter."""


class _ArgumentComparison(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _errno_action(number: int) -> int:
    return 0x00050000 | (number & 0xFFFF)  # SCMP_ACT_ERRNO


@cache
def build_filter() -> bytes:
    """The filter as bwrap's --seccomp takes it: a compiled BPF program."""
    name = ctypes.util.find_library("seccomp")
    if name is None:
        raise SeccompUnavailable(f"libseccomp is not installed: {INSTALL_HINT}")
    library = ctypes.CDLL(name, use_errno=True)
    library.seccomp_init.restype = ctypes.c_void_p
    library.seccomp_init.argtypes = [ctypes.c_uint32]
    library.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    library.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                              ctypes.POINTER(_ArgumentComparison)]
    library.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    library.seccomp_release.argtypes = [ctypes.c_void_p]
    context = library.seccomp_init(SCMP_ACT_ALLOW)
    if not context:
        raise SeccompUnavailable("libseccomp could not start a filter")
    try:
        for call in DENIED:
            _add(library, context, _errno_action(errno.EPERM), call)
        for call in UNSUPPORTED:
            _add(library, context, _errno_action(errno.ENOSYS), call)
        for flag in CLONE_NAMESPACE_FLAGS:
            _add(library, context, _errno_action(errno.EPERM), "clone",
                 _ArgumentComparison(0, SCMP_CMP_MASKED_EQ, flag, flag))
        descriptor = os.memfd_create("agentledger-seccomp")
        try:
            if library.seccomp_export_bpf(context, descriptor) != 0:
                raise SeccompUnavailable("libseccomp could not compile the filter")
            os.lseek(descriptor, 0, os.SEEK_SET)
            return _read_all(descriptor)
        finally:
            os.close(descriptor)
    finally:
        library.seccomp_release(context)


def _add(library: ctypes.CDLL, context: int, action: int, call: str,
         comparison: _ArgumentComparison | None = None) -> None:
    number = library.seccomp_syscall_resolve_name(call.encode())
    if number < 0:
        return  # not a system call of this architecture: nothing to deny
    comparisons = (_ArgumentComparison * 1)(comparison) if comparison else None
    if library.seccomp_rule_add_array(context, action, number, 1 if comparison else 0, comparisons) != 0:
        raise SeccompUnavailable(f"libseccomp refused the rule for {call}")


def _read_all(descriptor: int) -> bytes:
    chunks = []
    while chunk := os.read(descriptor, 65536):
        chunks.append(chunk)
    return b"".join(chunks)
