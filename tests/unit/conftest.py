"""Fixtures the unit tests of the stages share."""
from __future__ import annotations

from typing import Any

import pytest

from agentledger import faults


class CrashOnce:
    def __init__(self, point: str) -> None:
        self.point, self.fired = point, False

    def should_crash(self, run_id: str, stage: str, point: str, execution: str) -> bool:
        if point == self.point and not self.fired:
            self.fired = True
            return True
        return False


@pytest.fixture
def crash_once() -> Any:
    def arm(point: str) -> CrashOnce:
        injector = CrashOnce(point)
        faults.install(injector)
        return injector

    yield arm
    faults.install(None)
