"""A stage parked on its build: woken by the build's end, once; the room a build frees goes to the
stage that asked for a build first; a build that ended before the parking is not waited for; a
queue that moves is waited in however long, and one that stopped moving goes to a person."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from agentledger.errors import BuildQueueTimeoutError, BuildWaitNotNeededError
from agentledger.models import Stage, utc_now
from agentledger.ports import BuildWait
from agentledger.restart import classify
from agentledger.states import FailureKind
from agentledger.testing.adapters import InMemoryBuildWaits
from agentledger.testing.world import World, build_world
from agentledger.workflow.build_waits import QUEUE_STALL_S, BuildEnds, BuildParking
from agentledger.workflow.builds import (
    BUILD_END_FALLBACK_SECONDS,
    ROOM_FALLBACK_SECONDS,
    ROOM_FIRST_LOOK_SECONDS,
    room_wait_seconds,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


@pytest.fixture
def waits() -> InMemoryBuildWaits:
    return InMemoryBuildWaits()


def _parking(world: World, waits: InMemoryBuildWaits) -> BuildParking:
    return BuildParking(world.builds, waits)


def _wait(run_id: str, looked: dict, token: str) -> BuildWait:
    """What the state machine hands the parking: the stage's answer, and the task's token."""
    return BuildWait(run_id, Stage.VERIFY, token, looked["queued_at"], looked["build_id"])


def _ends(world: World, waits: InMemoryBuildWaits) -> BuildEnds:
    return BuildEnds(waits, world.executions)


def _at_verify(world: World, key: str) -> str:
    run_id, execution = world.create(key)
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN, Stage.EXECUTE)
    return run_id


def _look(world: World, run_id: str) -> dict:
    return world.workflow.run_stage(Stage.VERIFY, run_id, f"{run_id}-start")


def _build_id(world: World, run_id: str) -> str:
    test_run = world.ledger.load(run_id).latest_test_run(Stage.VERIFY)
    assert test_run is not None and test_run.build_id is not None
    return test_run.build_id


def test_a_running_build_parks_its_stage_until_the_build_ends_and_its_end_answers_once(
        world: World, waits: InMemoryBuildWaits) -> None:
    world.builds.polls_before_done = 1  # the parking's look: the stage that starts a build does not look
    run_id = _at_verify(world, "key-1")
    looked = _look(world, run_id)
    assert (looked["done"], looked["poll_after_s"]) == (False, BUILD_END_FALLBACK_SECONDS)

    parked = _parking(world, waits).park(_wait(run_id, looked, "token-1"), looked["poll_after_s"])
    build_id = _build_id(world, run_id)
    assert looked["build_id"] == build_id
    assert parked == {"parked": True, "build_id": build_id}
    assert not world.executions.answers

    ends = _ends(world, waits)
    assert ends.build_ended(build_id) == {"woken": 1, "given_room": 0}
    assert world.executions.answered("success") == [("success", "token-1", {"woken_by": build_id})]
    # EventBridge delivers at least once: the same end again wakes nobody twice.
    assert ends.build_ended(build_id) == {"woken": 0, "given_room": 0}
    assert len(world.executions.answers) == 1
    assert _look(world, run_id)["done"]


def test_a_build_that_ended_before_its_stage_parked_is_not_waited_for(world: World, waits: InMemoryBuildWaits) -> None:
    run_id = _at_verify(world, "key-1")
    looked = _look(world, run_id)
    assert not looked["done"]  # started: the parking looks
    with pytest.raises(BuildWaitNotNeededError, match="ended before its wait was parked"):
        _parking(world, waits).park(_wait(run_id, looked, "token-1"), BUILD_END_FALLBACK_SECONDS)
    assert not waits.parked  # nothing left for a later event to answer
    assert _look(world, run_id)["done"]


def test_the_room_a_build_frees_goes_to_the_stage_that_asked_for_a_build_first(
        world: World, waits: InMemoryBuildWaits) -> None:
    parking = _parking(world, waits)
    queued = [_at_verify(world, f"key-{n}") for n in range(3)]
    world.builds.refusals = 3
    for n, run_id in enumerate(queued):
        looked = _look(world, run_id)
        assert (looked["done"], looked["poll_after_s"], looked["build_id"]) == (False, ROOM_FIRST_LOOK_SECONDS, None)
        assert parking.park(_wait(run_id, looked, f"token-{n}"), looked["poll_after_s"]) == {
            "parked": True, "build_id": None}

    ends = _ends(world, waits)
    # Each end offers one room, to the oldest request; the first of them took its task's fallback
    # already (its token is over), so the room passes to the next.
    world.executions.live_tokens = {"token-1", "token-2"}
    assert ends.build_ended("other-build:1") == {"woken": 0, "given_room": 1}
    assert ends.build_ended("other-build:2") == {"woken": 0, "given_room": 1}
    assert [token for _, token, _ in world.executions.answered("success")] == ["token-0", "token-1", "token-2"]
    assert ends.build_ended("other-build:3") == {"woken": 0, "given_room": 0}


def test_a_stage_waiting_for_room_looks_itself_soon_at_first_then_less_often_the_longer_it_waits() -> None:
    # Nothing of the project may be running to end and offer room (the account's limit counts other
    # projects' builds), so a fresh refusal is looked at again within seconds...
    assert room_wait_seconds(0) == ROOM_FIRST_LOOK_SECONDS
    # ...each look doubles the wait, as the wait is as long as what was waited already...
    waited, looks = 0.0, []
    while (pause := room_wait_seconds(waited)) < ROOM_FALLBACK_SECONDS:
        looks.append(pause)
        waited += pause
    assert looks == [10, 10, 20, 40, 80, 160]
    # ...and a stage queued for hours looks at most every 5 minutes, waiting for its turn.
    assert room_wait_seconds(3 * 3600) == ROOM_FALLBACK_SECONDS == 300


def test_a_stage_parked_again_is_answered_on_its_newest_token_only(world: World, waits: InMemoryBuildWaits) -> None:
    parking = _parking(world, waits)
    run_id = _at_verify(world, "key-1")
    world.builds.refusals = 2
    for token in ("token-old", "token-new"):  # the first parking's task timed out, the stage looked again
        parking.park(_wait(run_id, _look(world, run_id), token), ROOM_FALLBACK_SECONDS)
    assert _ends(world, waits).build_ended("other-build:1") == {"woken": 0, "given_room": 1}
    assert [token for _, token, _ in world.executions.answered("success")] == ["token-new"]


def _queued_hours_ago(world: World, waits: InMemoryBuildWaits, hours: float) -> tuple[BuildWait, BuildParking]:
    return BuildWait("run-1", Stage.VERIFY, "token-1", _ago(hours)), _parking(world, waits)


def _ago(hours: float) -> str:
    return (datetime.now(UTC) - timedelta(hours=hours)).isoformat()


def test_a_long_queue_that_moves_is_waited_in_however_long_it_is(world: World, waits: InMemoryBuildWaits) -> None:
    wait, parking = _queued_hours_ago(world, waits, QUEUE_STALL_S / 3600 * 3)  # a day's flood of runs
    waits.mark_build_ended(_ago(0.1))
    assert parking.park(wait, ROOM_FALLBACK_SECONDS)["parked"]


def test_a_queue_no_build_has_left_for_hours_is_stuck_and_its_stage_goes_to_a_person(
        world: World, waits: InMemoryBuildWaits) -> None:
    wait, parking = _queued_hours_ago(world, waits, QUEUE_STALL_S / 3600 + 1)
    waits.mark_build_ended(_ago(QUEUE_STALL_S / 3600 + 0.5))
    with pytest.raises(BuildQueueTimeoutError, match="no build of the project has ended") as stuck:
        parking.park(wait, ROOM_FALLBACK_SECONDS)
    assert not waits.parked
    classified = classify(type(stuck.value).__name__, str(stuck.value), 0, 1)
    assert classified.kind == FailureKind.NEEDS_PERSON and "stuck builds" in classified.reason


def test_the_end_of_any_build_marks_the_queue_as_moving(world: World, waits: InMemoryBuildWaits) -> None:
    before = utc_now()
    _ends(world, waits).build_ended("other-build:1")
    assert waits.last_build_ended() is not None and waits.last_build_ended() >= before
