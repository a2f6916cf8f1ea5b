"""EffectRunner on the in-memory adapters, beyond test_orchestration.py: a write the receiver
stored despite answering an error, a lost write that is re-checked but never resent, a refusal,
a rate limit waited out by the state machine, an effect on stale context, and two attempts racing
for one idempotency lock."""
from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import pytest

from agentledger.effects import MAX_PACED_WAIT_S, MAX_RATE_LIMIT_WAIT_S, MAX_RATE_LIMIT_WAITS
from agentledger.errors import (
    EffectFailedError,
    EffectInProgressError,
    EffectRateLimitedError,
    EffectRejectedError,
    EffectUnconfirmedError,
    StaleContextError,
)
from agentledger.models import DecisionKind, EffectStatus, Handoff, RunStatus
from agentledger.pacing import PacedReceiver
from agentledger.ports import (
    Confirmation,
    ReceiverNoResponseError,
    ReceiverRateLimitedError,
    ReceiverRejectedError,
)
from agentledger.testing.effects import DROP_RESPONSE, UNAVAILABLE, InMemoryTracker
from agentledger.testing.world import OPERATOR, World, build_world
from tests.samples import edit_sample_repository

if TYPE_CHECKING:
    from pathlib import Path

REJECT = "reject"  # refuse the write (a bad token): nothing stored
LOSE = "lose"  # the write never arrives and no answer comes back


class FaultyTracker(InMemoryTracker):
    """The in-memory tracker with the faults it lacks, and a gate to hold a write open. `limits`:
    the next writes each answer a rate limit naming that many seconds (None: naming no time)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: threading.Event | None = None
        self.sending = threading.Event()
        self.limits: deque[float | None] = deque()

    def send(self, key: str, payload: dict[str, Any]) -> Confirmation:
        if self.limits:
            self.writes += 1
            wait = self.limits.popleft()
            raise ReceiverRateLimitedError("tracker answered 429", {"status": 429}, wait)
        fault = self.faults[0] if self.faults else None
        if fault in (REJECT, LOSE):
            self.faults.popleft()
            self.writes += 1
            if fault == REJECT:
                raise ReceiverRejectedError("tracker refused the write with 401", {"status": 401})
            raise ReceiverNoResponseError("the write timed out")
        if self.gate is not None:
            self.sending.set()
            assert self.gate.wait(5), "the test never opened the gate"
        return super().send(key, payload)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path, tracker=FaultyTracker())


def _effect(world: World, run_id: str, kind: str = "ticket"):
    [effect] = [e for e in world.ledger.load(run_id).effects.values() if e.kind == kind]
    return effect


def test_a_write_stored_despite_an_error_answer_is_found_and_not_sent_again(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(UNAVAILABLE)
    with pytest.raises(EffectFailedError):
        world.effects.deliver(run_id, execution, "ticket")
    failed = _effect(world, run_id)
    assert failed.status == EffectStatus.FAILED and failed.response == {"status": 503}
    world.tracker.records.append((failed.key, failed.request))  # the 503 came after the receiver stored it

    outcome = world.effects.deliver(run_id, execution, "ticket")
    assert outcome["status"] == "confirmed" and outcome["receiver_id"] == "#1"
    assert world.tracker.writes == 1 and world.tracker.copies(failed.key) == 1
    confirmed = _effect(world, run_id)
    assert confirmed.duplicates_suppressed == 1 and confirmed.receiver_copies == 1
    assert world.metrics.counts["DuplicatesSuppressed"] == 1


@pytest.mark.parametrize("fault", [UNAVAILABLE, DROP_RESPONSE])
def test_a_write_found_at_the_receiver_is_confirmed_on_one_look(world: World, fault: str) -> None:
    """Found by the look before writing again (the 503 came after the receiver stored it), or by the
    re-check of a write whose answer was lost: the copies are what that look found, not asked again."""
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(fault)
    with pytest.raises((EffectFailedError, EffectUnconfirmedError)):
        world.effects.deliver(run_id, execution, "ticket")
    key = _effect(world, run_id).key
    if fault == UNAVAILABLE:
        world.tracker.records.append((key, {}))
    looks = world.tracker.looks
    assert world.effects.deliver(run_id, execution, "ticket")["status"] == "confirmed"
    assert world.tracker.looks - looks == 1
    assert _effect(world, run_id).receiver_copies == 1


def test_a_lost_write_is_re_checked_but_never_resent_by_the_execution_that_sent_it(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(LOSE)
    with pytest.raises(EffectUnconfirmedError):
        world.effects.deliver(run_id, execution, "ticket")
    for rechecks in (1, 2):
        with pytest.raises(EffectUnconfirmedError, match=f"{rechecks} re-check"):
            world.effects.deliver(run_id, execution, "ticket")
    effect = _effect(world, run_id)
    assert effect.status == EffectStatus.UNCONFIRMED and effect.rechecks == 2
    assert world.tracker.writes == 1  # unknown outcome: look, never blindly write again

    world.workflow.classify(run_id, execution, {"Error": "EffectUnconfirmedError"}, failed_stage="complete")
    [handoff] = [Handoff.model_validate(d.details) for d in world.ledger.load(run_id).decisions if d.kind == "handoff"]
    assert [(e.kind, e.status, e.attempts) for e in handoff.partial_effect.external_effects] == [
        ("ticket", EffectStatus.UNCONFIRMED, 1)]

    resumed = world.service.resume(run_id, OPERATOR)["execution"]  # a person checked the tracker: nothing there
    outcome = world.effects.deliver(run_id, resumed, "ticket")
    assert outcome["status"] == "confirmed" and world.tracker.writes == 2 and world.tracker.copies(effect.key) == 1


def test_a_dropped_answer_then_a_resume_finds_the_write_instead_of_sending_it_twice(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(DROP_RESPONSE)
    with pytest.raises(EffectUnconfirmedError):
        world.effects.deliver(run_id, execution, "ticket")
    world.workflow.classify(run_id, execution, {"Error": "EffectUnconfirmedError"}, failed_stage="complete")
    resumed = world.service.resume(run_id, OPERATOR)["execution"]
    outcome = world.effects.deliver(run_id, resumed, "ticket")
    assert outcome["status"] == "confirmed"
    assert world.tracker.writes == 1 and world.tracker.copies(outcome["key"]) == 1


def test_a_refused_write_fails_the_effect_and_hands_the_run_to_a_person(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.faults.append(REJECT)
    with pytest.raises(EffectRejectedError, match="401"):
        world.effects.deliver(run_id, execution, "ticket")
    effect = _effect(world, run_id)
    assert effect.status == EffectStatus.FAILED and "401" in (effect.error or "")
    verdict = world.workflow.classify(run_id, execution, {"Error": "EffectRejectedError"}, failed_stage="complete")
    assert verdict["action"] == "handoff" and "refused" in verdict["reason"]
    assert world.ledger.get_run(run_id).status == RunStatus.NEEDS_PERSON


def _waits(world: World, run_id: str) -> list[int]:
    return [d.details["wait_s"] for d in world.ledger.load(run_id).decisions if d.kind == DecisionKind.RATE_LIMITED]


def test_a_rate_limited_write_asks_for_the_wait_the_receiver_named_and_then_lands_once(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.limits.append(1.2)

    waiting = world.effects.deliver(run_id, execution, "ticket")
    limited = _effect(world, run_id)
    delivered = world.effects.deliver(run_id, execution, "ticket")

    assert waiting["status"] == "rate_limited" and waiting["retry_after_s"] == 2  # whole seconds, never less
    assert limited.status == EffectStatus.FAILED and "429" in (limited.error or "")
    assert _waits(world, run_id) == [2] and world.metrics.counts["ReceiverRateLimited"] == 1
    assert delivered["status"] == "confirmed"
    assert world.tracker.writes == 2 and world.tracker.copies(delivered["key"]) == 1


def test_a_limit_that_names_no_time_waits_a_minute_then_doubles(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.limits.extend([None, None, None])

    waits = [world.effects.deliver(run_id, execution, "ticket")["retry_after_s"] for _ in range(3)]

    assert waits == [60, 120, 240] == _waits(world, run_id)
    assert world.effects.deliver(run_id, execution, "ticket")["status"] == "confirmed"


def test_a_wait_longer_than_a_run_spends_hands_the_run_to_a_person_naming_it(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.limits.append(3600)

    with pytest.raises(EffectRateLimitedError, match="wait 3600 s"):
        world.effects.deliver(run_id, execution, "ticket")
    verdict = world.workflow.classify(run_id, execution, {"Error": "EffectRateLimitedError"}, failed_stage="complete")

    assert verdict["action"] == "handoff" and "rate limit" in verdict["reason"]
    assert world.tracker.copies(_effect(world, run_id).key) == 0


def test_a_limit_met_again_and_again_hands_over_and_a_resume_waits_afresh(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.limits.extend([1] * (MAX_RATE_LIMIT_WAITS + 2))
    for _ in range(MAX_RATE_LIMIT_WAITS):
        assert world.effects.deliver(run_id, execution, "ticket")["status"] == "rate_limited"

    with pytest.raises(EffectRateLimitedError, match=f"{MAX_RATE_LIMIT_WAITS + 1} times"):
        world.effects.deliver(run_id, execution, "ticket")
    world.workflow.classify(run_id, execution, {"Error": "EffectRateLimitedError"}, failed_stage="complete")
    resumed = world.service.resume(run_id, OPERATOR)["execution"]

    assert world.effects.deliver(run_id, resumed, "ticket")["status"] == "rate_limited"
    assert world.effects.deliver(run_id, resumed, "ticket")["status"] == "confirmed"


def test_no_effect_is_written_on_stale_context(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    edit_sample_repository(world.repo)
    with pytest.raises(StaleContextError):
        world.effects.deliver(run_id, execution, "ticket")
    assert world.tracker.writes == 0 and world.ledger.load(run_id).effects == {}


def test_two_attempts_racing_for_one_effect_write_it_once(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.gate = threading.Event()
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(world.effects.deliver(run_id, execution, "ticket")))
    first.start()
    assert world.tracker.sending.wait(5)  # the first attempt holds the lock and is mid-write

    with pytest.raises(EffectInProgressError):
        world.effects.deliver(run_id, execution, "ticket")  # nothing at the receiver yet: wait, do not write
    world.tracker.gate.set()
    first.join(5)
    assert results and results[0]["status"] == "confirmed"
    assert world.effects.deliver(run_id, execution, "ticket")["status"] == "confirmed"
    assert world.tracker.writes == 1 and world.tracker.copies(results[0]["key"]) == 1


def test_the_same_effect_for_another_run_is_a_separate_write(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.effects.deliver(run_id, execution, "ticket")
    other, other_execution = world.to_review("key-2")  # same repository, same request
    world.approve(other)
    world.effects.deliver(other, other_execution, "ticket")
    assert world.tracker.writes == 2
    assert _effect(world, run_id).key != _effect(world, other).key


class ScriptedBudget:
    """The token's write budget, answering each take with the next wait of its script (0: taken)."""

    def __init__(self, *waits: float) -> None:
        self.waits = list(waits)
        self.taken: list[int] = []

    def take(self, requests: int) -> float:
        wait = self.waits.pop(0) if self.waits else 0.0
        if not wait:
            self.taken.append(requests)
        return wait


def _paced(world: World, budget: ScriptedBudget) -> None:
    world.effects.receivers["tickets"] = PacedReceiver(world.effects.receivers["tickets"], budget, 3, lambda: 0.5)


def test_a_write_past_the_tokens_budget_is_not_sent_and_waits_for_the_next_window_in_turns(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    budget = ScriptedBudget(3000.2, 40.5)  # the hour's budget is spent; then the minute's
    _paced(world, budget)

    first = world.effects.deliver(run_id, execution, "ticket")
    second = world.effects.deliver(run_id, execution, "ticket")
    delivered = world.effects.deliver(run_id, execution, "ticket")

    assert [first["status"], second["status"]] == ["rate_limited", "rate_limited"]
    # Waited in turns the state machine's Wait state takes: at most 15 minutes, whatever the window.
    assert (first["retry_after_s"], second["retry_after_s"]) == (MAX_RATE_LIMIT_WAIT_S, 41)  # 40.5 + 0.5 of jitter
    assert world.tracker.writes == 1 and budget.taken == [3]  # sent once, when the budget had room
    assert delivered["status"] == "confirmed" and world.tracker.copies(delivered["key"]) == 1
    paced = [d.details for d in world.ledger.load(run_id).decisions if d.kind == DecisionKind.RATE_LIMITED]
    assert [detail["paced"] for detail in paced] == [True, True]
    assert world.metrics.counts["ReceiverPaced"] == 2 and not world.metrics.counts["ReceiverRateLimited"]


def test_turns_in_the_budgets_queue_are_not_limits_met_but_a_day_of_them_goes_to_a_person(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    turns = MAX_PACED_WAIT_S // MAX_RATE_LIMIT_WAIT_S
    _paced(world, ScriptedBudget(*[3600.0] * (turns + 1)))
    for _ in range(turns):  # far more than the limits a run meets before a person is asked
        assert world.effects.deliver(run_id, execution, "ticket")["status"] == "rate_limited"
    assert turns > MAX_RATE_LIMIT_WAITS

    with pytest.raises(EffectRateLimitedError, match="write budget"):
        world.effects.deliver(run_id, execution, "ticket")
    assert world.tracker.writes == 0


class CountingLedger:
    """The world's ledger, counting the reads (`load`) and the records appended, by effect status."""

    def __init__(self, ledger: Any) -> None:
        self._ledger = ledger
        self.loads = 0
        self.appended: list[EffectStatus] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)

    def load(self, run_id: str) -> Any:
        self.loads += 1
        return self._ledger.load(run_id)

    def append(self, run_id: str, record: Any) -> None:
        if hasattr(record, "status") and isinstance(record.status, EffectStatus):
            self.appended.append(record.status)
        self._ledger.append(run_id, record)


def test_a_delivery_reads_the_ledger_once_and_records_the_attempt_before_the_call(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    counting = CountingLedger(world.ledger)
    world.effects.ledger = counting  # type: ignore[assignment]

    assert world.effects.deliver(run_id, execution, "ticket")["status"] == "confirmed"

    # Read on entry only: the record this invocation wrote is not read back from the ledger.
    assert counting.loads == 1
    assert counting.appended == [EffectStatus.ATTEMPTED, EffectStatus.CONFIRMED]
    assert world.tracker.writes == 1 and _effect(world, run_id).status == EffectStatus.CONFIRMED
    # A second invocation reads the ledger again, and finds the effect confirmed.
    assert world.effects.deliver(run_id, execution, "ticket")["status"] == "confirmed"
    assert counting.loads == 2 and world.tracker.writes == 1


def test_an_attempt_that_stops_before_the_call_leaves_the_effect_intended(world: World) -> None:
    run_id, execution = world.ready_to_complete()
    world.tracker.gate = threading.Event()
    first = threading.Thread(target=lambda: world.effects.deliver(run_id, execution, "ticket"))
    first.start()
    assert world.tracker.sending.wait(5)
    world.effects.ledger = counting = CountingLedger(world.ledger)  # type: ignore[assignment]

    with pytest.raises(EffectInProgressError):
        world.effects.deliver(run_id, execution, "ticket")

    world.tracker.gate.set()
    first.join(5)
    # The first attempt had recorded it (attempted, before its call): the second adds nothing,
    # and the only record written since is the first attempt's confirmation.
    assert counting.appended == [EffectStatus.CONFIRMED]


def test_a_look_that_fails_before_the_call_records_the_effect_as_intended(world: World) -> None:
    run_id, execution = world.ready_to_complete()

    def unavailable(key: str) -> list[Confirmation]:
        raise ReceiverNoResponseError("the search timed out")

    world.tracker.find = unavailable  # type: ignore[method-assign]
    with pytest.raises(ReceiverNoResponseError):
        world.effects.deliver(run_id, execution, "ticket")
    assert world.tracker.writes == 0 and _effect(world, run_id).status == EffectStatus.INTENDED
