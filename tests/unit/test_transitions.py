"""The one table of allowed moves between run states."""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import pytest

from agentledger.errors import IllegalTransitionError, LedgerError
from agentledger.models import RunState, Stage
from agentledger.states import NextAction
from agentledger.transitions import ALLOWED_TRANSITIONS, check_transition

if TYPE_CHECKING:
    from enum import StrEnum

S = RunState
FORWARD = [S.CREATED, S.INSPECT, S.PLAN, S.EXECUTE, S.VERIFY, S.AWAIT_REVIEW, S.COMPLETE]
WORK_STATES = [RunState(stage.value) for stage in Stage]


@pytest.mark.parametrize(("current", "target"), list(zip(FORWARD, FORWARD[1:], strict=False)),
                         ids=lambda s: str(s))
def test_every_forward_edge_is_allowed(current: RunState, target: RunState) -> None:
    check_transition(current, target)


@pytest.mark.parametrize(("current", "target", "allowed"), [
    (S.INSPECT, S.EXECUTE, ["plan"]),
    (S.CREATED, S.PLAN, ["inspect"]),
    (S.PLAN, S.VERIFY, ["execute", "inspect", "complete"]),  # complete: a plan that writes nothing
    (S.EXECUTE, S.AWAIT_REVIEW, ["verify", "plan", "inspect"]),
    (S.VERIFY, S.COMPLETE, ["await_review", "plan", "inspect"]),
])
def test_skipping_a_stage_is_refused_naming_the_allowed_targets(
    current: RunState, target: RunState, allowed: list[str]
) -> None:
    with pytest.raises(IllegalTransitionError) as raised:
        check_transition(current, target)
    message = str(raised.value)
    assert f"from {current} to {target}" in message
    listed = {name.strip() for name in message.split("allowed:", 1)[1].split(",")}
    assert listed == {*allowed, "needs_person", "cancelled"}


@pytest.mark.parametrize("current", [*WORK_STATES[:-1], S.CREATED, S.NEEDS_PERSON])
def test_a_run_may_be_cancelled_until_it_writes_its_effects_and_then_goes_nowhere(current: RunState) -> None:
    check_transition(current, S.CANCELLED)
    with pytest.raises(IllegalTransitionError):
        check_transition(S.COMPLETE, S.CANCELLED)
    for target in RunState:
        with pytest.raises(IllegalTransitionError):
            check_transition(S.CANCELLED, target)


def test_an_illegal_transition_is_a_ledger_error() -> None:
    # The workflow's own error base class: handlers map it rather than crash on it.
    with pytest.raises(LedgerError):
        check_transition(S.INSPECT, S.COMPLETE)


@pytest.mark.parametrize("current", [S.EXECUTE, S.VERIFY, S.AWAIT_REVIEW])
@pytest.mark.parametrize("target", [S.PLAN, S.INSPECT])
def test_back_edges_to_plan_and_inspect_are_allowed_once_work_has_started(
    current: RunState, target: RunState
) -> None:
    check_transition(current, target)


def test_plan_can_go_back_to_inspect_when_the_source_changes() -> None:
    check_transition(S.PLAN, S.INSPECT)


@pytest.mark.parametrize("target", [S.PLAN, S.INSPECT, S.EXECUTE, S.VERIFY, S.AWAIT_REVIEW, S.CREATED])
def test_a_complete_run_cannot_go_back_to_work(target: RunState) -> None:
    with pytest.raises(IllegalTransitionError):
        check_transition(S.COMPLETE, target)


@pytest.mark.parametrize("target", WORK_STATES, ids=lambda s: str(s))
def test_a_stopped_run_can_resume_at_any_work_stage(target: RunState) -> None:
    check_transition(S.NEEDS_PERSON, target)


def test_a_stopped_run_cannot_go_back_to_created() -> None:
    with pytest.raises(IllegalTransitionError):
        check_transition(S.NEEDS_PERSON, S.CREATED)


@pytest.mark.parametrize("current", FORWARD, ids=lambda s: str(s))
def test_every_running_state_can_be_handed_to_a_person(current: RunState) -> None:
    check_transition(current, S.NEEDS_PERSON)


def test_the_table_is_total_over_run_states() -> None:
    assert set(ALLOWED_TRANSITIONS) == set(RunState)
    for targets in ALLOWED_TRANSITIONS.values():
        assert all(isinstance(target, RunState) for target in targets)


def test_nothing_moves_back_to_created() -> None:
    assert all(S.CREATED not in targets for targets in ALLOWED_TRANSITIONS.values())


def test_every_state_is_reachable_from_created() -> None:
    seen, queue = {S.CREATED}, deque([S.CREATED])
    while queue:
        for target in ALLOWED_TRANSITIONS[queue.popleft()] - seen:
            seen.add(target)
            queue.append(target)
    assert seen == set(RunState)


@pytest.mark.parametrize("names", [RunState, NextAction], ids=lambda e: e.__name__)
def test_every_stage_is_a_run_state_and_a_next_action_under_its_own_name(names: type[StrEnum]) -> None:
    stages = {stage.name: stage.value for stage in Stage}
    members = {member.name: member.value for member in names}

    assert stages.items() <= members.items()
    assert [name for name in members if name in stages] == list(stages)  # in the workflow's order
