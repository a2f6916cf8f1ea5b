"""The printed report: titled tables of figures, each target beside the figure it judges.

A target is printed, never asserted: the bench measures, and a missed target is a finding to
read, not a failure of the bench."""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

MET = "met"
NOT_MET = "NOT MET"
NOT_MEASURED = "not measured"

_FIGURE = re.compile(r"[-+\d.,x%/ =]+")
_started = time.monotonic()


def progress(message: str) -> None:
    """One line per phase on stderr, so a long bench shows where it is without touching the report."""
    print(f"[bench {time.monotonic() - _started:6.1f}s] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Target:
    """`goal` in words (`<= 0.05x fresh`); `met` is None when the bench did not measure at the
    size the target names (`--quick`)."""
    goal: str
    met: bool | None

    @property
    def mark(self) -> str:
        return NOT_MEASURED if self.met is None else MET if self.met else NOT_MET


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: list[Sequence[object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    targets: list[tuple[str, Target]] = field(default_factory=list)  # (the figure, its target)

    def add(self, *cells: object) -> None:
        self.rows.append(cells)

    def target(self, figure: str, target: Target) -> None:
        self.targets.append((figure, target))

    def render(self) -> str:
        cells = [[str(column) for column in self.columns]] + [[_format(cell) for cell in row] for row in self.rows]
        widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(self.columns))]
        # Figures line up on the right, words (the first column, statuses, lists) on the left.
        words = [i == 0 or any(not _FIGURE.fullmatch(row[i]) for row in cells[1:] if i < len(row))
                 for i in range(len(self.columns))]
        lines = [self.title, "-" * len(self.title)]
        for index, row in enumerate(cells):
            lines.append("  ".join(cell.ljust(widths[i]) if words[i] else cell.rjust(widths[i])
                                   for i, cell in enumerate(row)).rstrip())
            if index == 0:
                lines.append("  ".join("-" * width for width in widths))
        for figure, target in self.targets:
            lines.append(f"target: {target.goal:<44} measured: {figure:<24} [{target.mark}]")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def _format(cell: object) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, float):
        return f"{cell:.3f}" if abs(cell) < 1 else f"{cell:.2f}"
    return str(cell)


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.3f}x" if baseline else "-"


def short_function_name(function: str) -> str:
    """`AgentLedgerStack-VerifyFunction-WVNAP1JRXYFG` reads as `VerifyFunction`."""
    parts = function.split("-")
    return parts[1] if len(parts) == 3 else function


def crashed(title: str, error: BaseException, targets: Sequence[str]) -> Table:
    """What a phase that raised prints instead of its figures: the error, and its targets not met
    (a figure that could not be measured does not meet its target)."""
    table = Table(title, ["phase"], [[f"crashed: {type(error).__name__}: {error}"[:300]]])
    for goal in targets:
        table.target("crashed", Target(goal, False))
    return table


def summary(tables: Sequence[Table]) -> Table:
    """Every target of the report in one place, as the last table."""
    table = Table("Targets", ["target", "measured", "mark"])
    for section in tables:
        for figure, target in section.targets:
            table.add(target.goal, figure, target.mark)
    return table
