"""Named crash points: inert in production, a hard crash when the local runtime asks for one."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentledger import faults
from agentledger.faults import SimulatedCrash
from agentledger.states import EFFECTS, Stage

if TYPE_CHECKING:
    from collections.abc import Iterator


class At:
    """Crashes at one (stage, point) and remembers every point it was asked about."""

    def __init__(self, stage: str, point: str) -> None:
        self.target = (stage, point)
        self.asked: list[tuple[str, str, str, str]] = []

    def should_crash(self, run_id: str, stage: str, point: str, execution: str) -> bool:
        self.asked.append((run_id, stage, point, execution))
        return (stage, point) == self.target


@pytest.fixture(autouse=True)
def nothing_installed() -> Iterator[None]:
    faults.install(None)
    yield
    faults.install(None)


def test_reach_does_nothing_without_an_injector() -> None:
    for point in faults.STAGE_CRASH_POINTS:
        faults.reach("run-1", "plan", point, "run-1-start")


def test_reach_crashes_where_the_injector_says_so() -> None:
    injector = At("plan", "after_artifacts")
    faults.install(injector)
    faults.reach("run-1", "plan", "before_work", "run-1-start")
    faults.reach("run-1", "execute", "after_artifacts", "run-1-start")
    with pytest.raises(SimulatedCrash, match="plan:after_artifacts") as raised:
        faults.reach("run-1", "plan", "after_artifacts", "run-1-start")
    assert "run-1" in str(raised.value)
    assert injector.asked[-1] == ("run-1", "plan", "after_artifacts", "run-1-start")


def test_a_simulated_crash_is_not_caught_by_except_exception() -> None:
    faults.install(At("verify", "after_commit"))
    caught_as_exception = False
    with pytest.raises(SimulatedCrash):
        try:
            faults.reach("run-1", "verify", "after_commit", "run-1-start")
        except Exception:  # noqa: BLE001 — exactly what a handler's cleanup would write
            caught_as_exception = True
    assert not caught_as_exception
    assert issubclass(SimulatedCrash, BaseException) and not issubclass(SimulatedCrash, Exception)


def test_install_none_removes_the_injector() -> None:
    faults.install(At("plan", "before_work"))
    with pytest.raises(SimulatedCrash):
        faults.reach("run-1", "plan", "before_work", "run-1-start")
    faults.install(None)
    faults.reach("run-1", "plan", "before_work", "run-1-start")


def test_a_later_install_replaces_the_earlier_injector() -> None:
    faults.install(At("plan", "before_work"))
    faults.install(At("verify", "before_work"))
    faults.reach("run-1", "plan", "before_work", "run-1-start")
    with pytest.raises(SimulatedCrash):
        faults.reach("run-1", "verify", "before_work", "run-1-start")


def test_every_stage_has_the_stage_points_and_each_effect_has_its_points_in_its_stage() -> None:
    assert set(faults.CRASH_POINTS) == {stage.value for stage in Stage}
    assert faults.CRASH_POINTS["complete"] == faults.STAGE_CRASH_POINTS + tuple(
        f"{effect}.{point}" for effect in ("pull_request", "ticket", "completion_notification")
        for point in ("before_call", "after_accept", "after_record"))
    assert faults.CRASH_POINTS["verify"] == faults.STAGE_CRASH_POINTS + ("build_running",)
    assert faults.CRASH_POINTS["plan"] == faults.STAGE_CRASH_POINTS
    for stage, points in faults.CRASH_POINTS.items():
        effect_points = {point.partition(".")[0] for point in points if faults.is_effect_point(point)}
        assert effect_points == {name for name, spec in EFFECTS.items() if spec.stage == stage}


def test_parse_crash_splits_a_known_point_and_lists_the_known_ones_otherwise() -> None:
    assert faults.parse_crash("complete:ticket.after_accept") == ("complete", "ticket.after_accept")
    with pytest.raises(ValueError, match="unknown crash point 'plan:ticket.after_accept'; known: inspect:before_work"):
        faults.parse_crash("plan:ticket.after_accept")
    with pytest.raises(ValueError, match="unknown crash point 'complete:after_accept'"):
        faults.parse_crash("complete:after_accept")
    with pytest.raises(ValueError, match="unknown crash point 'nowhere'"):
        faults.parse_crash("nowhere")
