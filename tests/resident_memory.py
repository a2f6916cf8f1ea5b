"""This process's resident memory as Linux counts it (/proc/self/status), for the measures that
bound what a load costs: the high-water mark can be reset (/proc/self/clear_refs), so the peak
read after a load is the most that load needed on top of what was resident before it."""
from __future__ import annotations

import re
from pathlib import Path

STATUS_FILE = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
RESET_PEAK = "5"  # clear_refs: reset the peak resident set size to the current one


def reset_peak() -> float | None:
    """The resident set now, after making it the high-water mark; None where Linux's /proc is not."""
    try:
        CLEAR_REFS.write_text(RESET_PEAK)
    except OSError:
        return None
    return memory_mib("VmRSS")


def memory_mib(field: str) -> float | None:
    """`field` of /proc/self/status (VmRSS, VmHWM) in MiB; None where Linux's /proc is not."""
    try:
        match = re.search(rf"^{field}:\s+(\d+) kB", STATUS_FILE.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) / 1024 if match else None
