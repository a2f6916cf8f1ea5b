"""Coverage read from the JaCoCo XML reports a Java suite wrote (the jacoco-maven-plugin's
`report` goal, or JaCoCo's Ant task).

Like JUnit XML, the files come out of the sandbox, so they are untrusted: defusedxml refuses
entity tricks, a file past MAX_DOCUMENT_BYTES is not parsed, and one that is not a JaCoCo report
is named, not guessed at. What is kept is a few counts and the names read, each bounded.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from .junit import bounded_name, parse_bounded

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

JACOCO_ROOT = "report"
MAX_REPORT_NAMES = 20  # reports named as read, and as unreadable: kept in a ledger item
COUNTED = ("LINE", "BRANCH")  # JaCoCo's counter types a reviewer reads; instructions, methods… are not


class CoverageCounts(BaseModel):
    """Lines and branches of the measured classes, over every report read."""

    model_config = ConfigDict(frozen=True)

    lines: int
    lines_covered: int
    branches: int
    branches_covered: int
    files: list[str]  # reports read and counted
    unreadable: list[str]  # reports that were not well-formed JaCoCo XML, or too large to read

    def line(self) -> str:
        """Like `lines 50% (4 of 8), branches 38% (3 of 8), from 1 JaCoCo report`."""
        def share(covered: int, total: int) -> str:
            return f"{100.0 * covered / total:.0f}% ({covered} of {total})" if total else "none measured"

        read = len(self.files)
        unread = f", {len(self.unreadable)} unreadable" if self.unreadable else ""
        return (f"lines {share(self.lines_covered, self.lines)}, branches {share(self.branches_covered, self.branches)}"
                f", from {read} JaCoCo report{'' if read == 1 else 's'}{unread}")


def summarize_jacoco(documents: Mapping[str, bytes], unread: Sequence[str] = ()) -> CoverageCounts:
    """The report-level counters (a report's direct `counter` children total its packages) of
    every document, summed; `unread` are documents the caller did not read, named as unreadable."""
    missed: Counter[str] = Counter()
    covered: Counter[str] = Counter()
    files: list[str] = []
    unreadable: list[str] = []
    for name, data in documents.items():
        root = parse_bounded(data, frozenset({JACOCO_ROOT}))
        if root is None:
            unreadable.append(bounded_name(name))
            continue
        files.append(bounded_name(name))
        for counter in root.findall("counter"):
            kind = counter.get("type", "")
            if kind in COUNTED:
                missed[kind] += _count(counter.get("missed"))
                covered[kind] += _count(counter.get("covered"))
    unreadable.extend(bounded_name(name) for name in unread)
    return CoverageCounts(lines=missed["LINE"] + covered["LINE"], lines_covered=covered["LINE"],
                          branches=missed["BRANCH"] + covered["BRANCH"], branches_covered=covered["BRANCH"],
                          files=files[:MAX_REPORT_NAMES], unreadable=unreadable[:MAX_REPORT_NAMES])


def _count(value: str | None) -> int:
    """A counter's attribute; anything but a plain non-negative integer counts as 0."""
    return int(value) if value is not None and value.isascii() and value.isdigit() and len(value) < 19 else 0
