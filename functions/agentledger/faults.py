"""Named crash points. In production nothing is installed and `reach` does nothing; the local
runtime installs an injector to kill a handler the way a real crash would."""
from __future__ import annotations

from typing import Protocol

STAGE_CRASH_POINTS: tuple[str, ...] = ("before_work", "after_artifacts", "after_commit")


class SimulatedCrash(BaseException):
    """Derives from BaseException so `except Exception` handlers in the code under test, and in
    the libraries it uses, do not catch it: like a killed process, nothing gets to clean up."""


class CrashInjector(Protocol):
    def should_crash(self, run_id: str, stage: str, point: str, execution: str) -> bool: ...


_installed: CrashInjector | None = None


def install(injector: CrashInjector | None) -> None:
    global _installed
    _installed = injector


def reach(run_id: str, stage: str, point: str, execution: str) -> None:
    if _installed is not None and _installed.should_crash(run_id, stage, point, execution):
        raise SimulatedCrash(f"injected crash at {stage}:{point} for run {run_id}")
