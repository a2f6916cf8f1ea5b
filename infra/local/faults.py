"""Crash injection for the local runtime.

A stage crash point (`verify:after_artifacts`) kills that stage's handler at that point on every
attempt of the run's current execution, so the state machine's retries are exhausted and the
execution fails as it would on AWS; a resume (a new execution) runs clean. An effect crash point
(`complete:after_accept`) fires once: a lost response or a crash mid-call that the state
machine's own retry has to reconcile without writing twice."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agentledger import faults
from agentledger.effects import EFFECT_CRASH_POINTS, EFFECTS
from agentledger.faults import STAGE_CRASH_POINTS
from agentledger.models import Stage

_STAGES_WITH_EFFECTS = {spec.stage for spec in EFFECTS.values()}
CRASH_POINTS: dict[str, tuple[str, ...]] = {
    stage.value: STAGE_CRASH_POINTS + (EFFECT_CRASH_POINTS if stage in _STAGES_WITH_EFFECTS else ())
    for stage in Stage
}


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

    @property
    def spent(self) -> bool:
        return self.point in EFFECT_CRASH_POINTS and self.fired > 0


@dataclass
class CrashSwitchboard:
    armed: dict[str, list[ArmedCrash]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, run_id: str, spec: str) -> None:
        stage, point = parse_crash(spec)
        with self._lock:
            self.armed.setdefault(run_id, []).append(ArmedCrash(stage, point))

    def should_crash(self, run_id: str, stage: str, point: str, execution: str) -> bool:
        with self._lock:
            for crash in self.armed.get(run_id, []):
                if (crash.stage, crash.point) != (stage, point) or crash.spent:
                    continue
                crash.execution = crash.execution or execution
                if crash.execution == execution:
                    crash.fired += 1
                    return True
            return False

    def interruptions(self, run_id: str) -> int:
        """How many of the crashes armed for the run actually struck."""
        with self._lock:
            return sum(1 for crash in self.armed.get(run_id, []) if crash.fired)

    def install(self) -> None:
        faults.install(self)
