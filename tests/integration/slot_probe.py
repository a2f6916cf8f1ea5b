"""The handler of a function the invocation-slot tests deploy: it tells how much of its timeout
its context gave it, then stays as long as its event asks (to run past its timeout)."""
from __future__ import annotations

import time
from typing import Any


def report(event: dict[str, Any], context: Any) -> dict[str, Any]:
    remaining_ms = context.get_remaining_time_in_millis()
    time.sleep(event.get("stay_s", 0))
    return {"remaining_ms_at_start": remaining_ms}
