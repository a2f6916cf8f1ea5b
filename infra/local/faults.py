"""Crash injection for the local runtime: `--crash STAGE:POINT` kills that stage's handler at that
point on every attempt of the run's current execution, so the state machine's retries are
exhausted and the execution fails as it would on AWS. A resume (a new execution) runs clean."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agentledger import faults
from agentledger.faults import STAGE_CRASH_POINTS
from agentledger.models import Stage

CRASH_POINTS: dict[str, tuple[str, ...]] = {stage.value: STAGE_CRASH_POINTS for stage in Stage}


def parse_crash(spec: str) -> tuple[str, str]:
    stage, _, point = spec.partition(":")
    if stage not in CRASH_POINTS or point not in CRASH_POINTS[stage]:
        known = ", ".join(f"{s}:{p}" for s, points in CRASH_POINTS.items() for p in points)
        raise ValueError(f"unknown crash point {spec!r}; known: {known}")
    return stage, point


@dataclass
class ArmedCrash:
    stage: str
    point: str
    execution: str | None = None  # bound to the first execution that reaches the point
    fired: int = 0


@dataclass
class CrashSwitchboard:
    armed: dict[str, ArmedCrash] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, run_id: str, spec: str) -> None:
        stage, point = parse_crash(spec)
        with self._lock:
            self.armed[run_id] = ArmedCrash(stage, point)

    def should_crash(self, run_id: str, stage: str, point: str, execution: str) -> bool:
        with self._lock:
            crash = self.armed.get(run_id)
            if crash is None or (crash.stage, crash.point) != (stage, point):
                return False
            crash.execution = crash.execution or execution
            if crash.execution != execution:
                return False
            crash.fired += 1
            return True

    def interruptions(self) -> int:
        with self._lock:
            return sum(1 for crash in self.armed.values() if crash.fired)

    def install(self) -> None:
        faults.install(self)
