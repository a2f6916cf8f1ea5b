"""A process's resident memory as Linux counts it (/proc/PID/status; this process's by default),
for the measures that bound what a load costs: the high-water mark can be reset
(/proc/PID/clear_refs), so the peak read after a load is the most that load needed on top of what
was resident before it."""
from __future__ import annotations

import re
from pathlib import Path

RESET_PEAK = "5"  # clear_refs: reset the peak resident set size to the current one


def reset_peak(pid: int | str = "self") -> float | None:
    """The resident set now, after making it the high-water mark; None where Linux's /proc is not."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text(RESET_PEAK)
    except OSError:
        return None
    return memory_mib("VmRSS", pid)


def memory_mib(field: str, pid: int | str = "self") -> float | None:
    """`field` of /proc/PID/status (VmRSS, VmHWM) in MiB; None where Linux's /proc is not."""
    try:
        match = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) / 1024 if match else None
