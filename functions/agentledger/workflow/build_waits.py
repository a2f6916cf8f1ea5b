"""A stage waits for its build's end instead of polling it.

A stage whose build is still running, or could not start for want of room, hands back to the state
machine, which parks a task on a token (`park`). CodeBuild's state-change event for the build
(`build_ended`) answers the tasks parked on that build, and gives the room it freed to the stage
that has waited for room the longest: the builds queue in the order they were asked for. A parked
task also times out after the stage's fallback (`poll_after_s`) and looks again, so an event that
never comes costs a late look, not a run.

Polling cost three state transitions a look, every few seconds to every 30 s of every build; two
thirds of a run's transitions were spent there (`make bench`, table h)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import BuildQueueTimeoutError, BuildWaitNotNeededError
from ..models import seconds_between, utc_now
from ..states import BuildStatus

if TYPE_CHECKING:
    from ..ports import BuildStatusPort, BuildWait, BuildWaitPort, ExecutionPort

# A parking whose task is already over (its fallback looked first) is passed over for the next.
ROOM_OFFERS = 5
# A parking outlives its task's timeout by this much, then the table's TTL removes it.
PARKING_MARGIN_S = 300
# A queue for room that has not moved for this long is stuck (builds end by their timeout, so
# builds that hold the room and never end mean CodeBuild is failing): its stages go to a person.
# A queue that moves is waited in however long it is: 10,000 runs at 10 builds at once take a day.
QUEUE_STALL_S = 8 * 3600


class BuildParking:
    """The state machine's task: park the stage until its build ends or room frees to start it.
    What it waits on comes from the stage's answer (the build's id, or none yet, and when the build
    was asked for), so the parking reads no ledger."""

    def __init__(self, builds: BuildStatusPort, waits: BuildWaitPort) -> None:
        self.builds = builds
        self.waits = waits

    def park(self, wait: BuildWait, timeout_s: int) -> dict[str, Any]:
        """Raises BuildWaitNotNeededError when the build already ended: the state machine goes
        straight back to the stage, which reads it."""
        if wait.build_id is None:
            self._require_moving_queue(wait)
        self.waits.park(wait, timeout_s + PARKING_MARGIN_S)
        if wait.build_id is not None and self.builds.status(wait.build_id) != BuildStatus.IN_PROGRESS \
                and self.waits.take(wait):
            # It ended between the stage's look and this parking: its event found no one parked.
            raise BuildWaitNotNeededError(f"build {wait.build_id} ended before its wait was parked")
        return {"parked": True, "build_id": wait.build_id}

    def _require_moving_queue(self, wait: BuildWait) -> None:
        now = utc_now()
        moved = self.waits.last_build_ended()
        waited_s, still_s = seconds_between(wait.queued_at, now), seconds_between(moved or wait.queued_at, now)
        if waited_s > QUEUE_STALL_S and still_s > QUEUE_STALL_S:
            raise BuildQueueTimeoutError(
                f"{wait.stage.value} has waited {int(waited_s)} s for room to start its build, and no build of the "
                f"project has ended for {int(still_s)} s (at most {QUEUE_STALL_S} s): the builds that hold the room "
                "are not ending")


class BuildEnds:
    """CodeBuild says a build ended: answer what waits on it, and offer the room it freed to the
    stage that has waited for room the longest."""

    def __init__(self, waits: BuildWaitPort, executions: ExecutionPort) -> None:
        self.waits = waits
        self.executions = executions

    def build_ended(self, build_id: str) -> dict[str, int]:
        self.waits.mark_build_ended(utc_now())
        woken = sum(1 for wait in self.waits.waiting_for(build_id)
                    if self.waits.take(wait) and self.executions.succeed_task(wait.task_token, {"woken_by": build_id}))
        given_room = 0
        for wait in self.waits.waiting_for_room(ROOM_OFFERS):
            if self.waits.take(wait) and self.executions.succeed_task(wait.task_token, {"room_from": build_id}):
                given_room = 1
                break
        return {"woken": woken, "given_room": given_room}
