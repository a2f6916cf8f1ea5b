"""Crash injection for the local runtime.

A stage crash point (`verify:after_artifacts`) kills that stage's handler at that point on every
attempt of the run's current execution, so the state machine's retries are exhausted and the
execution fails as it would on AWS; a resume (a new execution) runs clean. An effect crash point
(`complete:ticket.after_accept`) fires once: a lost response or a crash mid-call that the state
machine's own retry has to reconcile without writing twice."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agentledger import faults
from agentledger.faults import CRASH_POINTS, is_effect_point, parse_crash

__all__ = ["CRASH_POINTS", "ArmedCrash", "CrashSwitchboard"]  # the points it accepts go with the switchboard


@dataclass
class ArmedCrash:
    stage: str
    point: str
    execution: str | None = None  # bound to the first execution that reaches the point
    fired: int = 0

    @property
    def spent(self) -> bool:
        return is_effect_point(self.point) and self.fired > 0


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
