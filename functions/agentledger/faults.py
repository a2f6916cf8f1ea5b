"""Named crash points. In production nothing is installed and `reach` does nothing; the local
runtime installs an injector to kill a handler the way a real crash would.

The vocabulary of points (`CRASH_POINTS`, `parse_crash`) lives here with no heavy import, so the
CLI can check `--crash STAGE:POINT` without loading pydantic, Powertools or the AWS SDK."""
from __future__ import annotations

from typing import Protocol

from .states import EFFECTS, Stage

STAGE_CRASH_POINTS: tuple[str, ...] = ("before_work", "after_artifacts", "after_commit")
EFFECT_CRASH_POINTS: tuple[str, ...] = ("before_call", "after_accept", "after_record")
# Reached by verify once its test build has started and the ledger holds the build's id.
BUILD_CRASH_POINTS: tuple[str, ...] = ("build_running",)


def effect_crash_point(effect: str, point: str) -> str:
    """Effect points are named after the effect (`complete:ticket.after_accept`), so a crash
    strikes one write of a stage that makes several."""
    return f"{effect}.{point}"


def is_effect_point(point: str) -> bool:
    return "." in point and point.rpartition(".")[2] in EFFECT_CRASH_POINTS


CRASH_POINTS: dict[str, tuple[str, ...]] = {
    stage.value: STAGE_CRASH_POINTS
    + tuple(effect_crash_point(name, point)
            for name, spec in EFFECTS.items() if spec.stage == stage for point in EFFECT_CRASH_POINTS)
    + (BUILD_CRASH_POINTS if stage == Stage.VERIFY else ())
    for stage in Stage
}
# The local API's request header that arms a crash for the run the request creates.
CRASH_HEADER = "X-Agentledger-Crash"


def parse_crash(spec: str) -> tuple[str, str]:
    """`stage:point` as (stage, point); a ValueError that lists the known points otherwise."""
    stage, _, point = spec.partition(":")
    if stage not in CRASH_POINTS or point not in CRASH_POINTS[stage]:
        known = ", ".join(f"{s}:{p}" for s, points in CRASH_POINTS.items() for p in points)
        raise ValueError(f"unknown crash point {spec!r}; known: {known}")
    return stage, point


class SimulatedCrash(BaseException):
    """Derives from BaseException so `except Exception` handlers in the code under test, and in
    the libraries it uses, do not catch it: like a killed process, nothing gets to clean up."""


class CrashInjector(Protocol):
    def should_crash(self, run_id: str, stage: str, point: str, execution: str) -> bool: ...


_installed: CrashInjector | None = None


def install(injector: CrashInjector | None) -> None:
    global _installed  # noqa: PLW0603 — one injector per process, which every crash point reads
    _installed = injector


def reach(run_id: str, stage: str, point: str, execution: str) -> None:
    if _installed is not None and _installed.should_crash(run_id, stage, point, execution):
        raise SimulatedCrash(f"injected crash at {stage}:{point} for run {run_id}")
