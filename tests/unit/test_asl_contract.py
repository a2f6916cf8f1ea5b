"""The state machine file, the restart policy and the handlers' event models name the same errors,
actions and fields: the ASL is JSON that Step Functions reads as it is, so the copies it forces
are checked here."""
from __future__ import annotations

import json
from typing import Any

import pytest

from agentledger.effects import RATE_LIMITED
from agentledger.errors import BuildWaitNotNeededError, EffectInProgressError, EffectUnconfirmedError
from agentledger.handlers.builds import BuildWatchEvent
from agentledger.handlers.events import EffectEvent, FailureEvent, StageEvent
from agentledger.restart import RETRYABLE_ERRORS, REVIEW_WAIT_TIMEOUTS
from agentledger.states import EFFECTS, NextAction, RecoveryAction, RunOutcome, Stage, Verdict
from tests.bench.timeline import BUILD_WAIT_STATES, DEFINITION, stages_of_tasks

ASL = json.loads(DEFINITION.read_text())
STATES: dict[str, dict[str, Any]] = ASL["States"]
TASKS = {name: state for name, state in STATES.items() if state["Type"] == "Task"}
# Only the effect states can meet another attempt's idempotency lock; they wait it out longer.
LOCK_WAIT = EffectInProgressError.__name__
# A write sent without an answer is re-checked (never resent) by the effect states' own retry.
RECHECK = EffectUnconfirmedError.__name__
THROTTLED_INVOKE = "Lambda.TooManyRequestsException"
EFFECT_TASKS = {name for name, state in TASKS.items()
                if any(LOCK_WAIT in retry["ErrorEquals"] for retry in state.get("Retry", []))}
# No payload names its stage (no handler reads one): a task's stage is the one its failure is charged to.
STAGE_OF_TASK = stages_of_tasks(ASL)


def _choices(state_name: str) -> dict[str, str]:
    return {choice["StringEquals"]: choice["Next"] for choice in STATES[state_name]["Choices"]}


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_retries_the_transient_errors_the_policy_names(name: str) -> None:
    retries = TASKS[name]["Retry"]
    waits_for_a_person = TASKS[name]["Resource"].endswith(".waitForTaskToken")
    expected = RETRYABLE_ERRORS - {LOCK_WAIT} - (REVIEW_WAIT_TIMEOUTS if waits_for_a_person else set())
    # A throttled invoke first, with a longer budget: a quota binding under load lasts longer than a
    # fault (docs/operations/capacity.md).
    throttled, general = retries[0], retries[1]
    assert throttled["ErrorEquals"] == [THROTTLED_INVOKE]
    assert throttled["MaxAttempts"] > general["MaxAttempts"] and throttled["JitterStrategy"] == "FULL"
    assert set(general["ErrorEquals"]) | {THROTTLED_INVOKE} == expected
    assert {"Sandbox.Timedout", "Lambda.Unknown"} <= expected
    retried = {error for retry in retries for error in retry["ErrorEquals"]}
    assert retried <= RETRYABLE_ERRORS | {RECHECK}


def test_the_lock_wait_is_retried_by_the_effect_states_and_only_there() -> None:
    assert {"Await review", "Open pull request", "Open ticket", "Announce completion"} == EFFECT_TASKS
    for name in EFFECT_TASKS:
        assert any(RECHECK in retry["ErrorEquals"] for retry in TASKS[name]["Retry"])


def test_every_task_failure_is_caught_and_classified() -> None:
    for name, state in TASKS.items():
        if name == "Classify failure":
            continue
        caught = [catch["ErrorEquals"] for catch in state["Catch"]]
        assert caught[-1:] == [["States.ALL"]], name
        assert caught[:-1] == ([["States.Timeout", BuildWaitNotNeededError.__name__]] if name in BUILD_WAIT_STATES
                               else []), name


@pytest.mark.parametrize(("stage_task", "ended_choice"), [("Write tests", "Tests written?"),
                                                          ("Run test suite", "Test build ended?")])
def test_a_stage_whose_build_runs_parks_until_it_ends_and_looks_again_when_it_does_or_times_out(
        stage_task: str, ended_choice: str) -> None:
    [running] = STATES[ended_choice]["Choices"]
    assert (running["Variable"], running["BooleanEquals"]) == ("$.last_stage.done", False)
    wait = STATES[running["Next"]]
    assert running["Next"] in BUILD_WAIT_STATES
    assert wait["Resource"].endswith(".waitForTaskToken") and wait["Parameters"]["Payload"]["stage"] == STAGE_OF_TASK[
        stage_task]
    # Its fallback is the stage's: a lost event costs one late look, and the look is the stage's own.
    assert wait["TimeoutSecondsPath"] == wait["Parameters"]["Payload"]["poll_after_s.$"] == "$.last_stage.poll_after_s"
    back = wait["Catch"][0]
    assert (wait["Next"], back["Next"], back["ResultPath"], wait["ResultPath"]) == (stage_task, stage_task, None, None)
    # The build's end answers it; a failure it cannot get past is charged to the stage it waits for.
    assert STAGE_OF_TASK[running["Next"]] == STAGE_OF_TASK[stage_task]


def test_every_next_action_of_an_assessment_is_routed() -> None:
    routed = _choices("Route to next stage")
    assert set(routed) == {action.value for action in NextAction} - {NextAction.NEEDS_PERSON}
    assert STATES["Route to next stage"]["Default"] == "Handed to a person"
    assert all(target in STATES for target in routed.values())


def test_every_recovery_action_of_the_classifier_is_routed() -> None:
    routed = _choices("Recovery route")
    assert set(routed) == {action.value for action in RecoveryAction} - {RecoveryAction.HANDOFF}
    assert STATES["Recovery route"]["Default"] == "Handed to a person"


def test_only_an_approval_goes_on_to_completion() -> None:
    assert _choices("Review decision") == {Verdict.APPROVE.value: "Open pull request"}
    assert STATES["Review decision"]["Default"] == "Assess restart"


def test_every_effect_of_a_run_has_its_state_in_the_order_the_run_makes_them() -> None:
    delivered = [state["Parameters"]["effect"] for state in TASKS.values() if "effect" in state.get("Parameters", {})]
    assert delivered == [name for name in EFFECTS if EFFECTS[name].stage == Stage.COMPLETE]
    state = STATES[_choices("Route to next stage")[NextAction.COMPLETE.value]]
    for name in delivered:
        state = STATES[state.get("Default") or state["Next"]]
        while state["Type"] == "Choice":  # a rate limit's wait, after an effect's state
            state = STATES[state["Default"]]
        assert state["Parameters"]["effect"] == name
    assert state["Next"] not in EFFECT_TASKS and STAGE_OF_TASK[state["Next"]] == Stage.COMPLETE


@pytest.mark.parametrize("effect", ["pull_request", "ticket"])
def test_a_rate_limited_github_write_is_waited_out_by_a_wait_state_and_sent_again(effect: str) -> None:
    [task] = [name for name, state in TASKS.items() if state["Parameters"].get("effect") == effect]
    choice = STATES[TASKS[task]["Next"]]
    [rule] = choice["Choices"]
    wait = STATES[rule["Next"]]

    assert (rule["Variable"], rule["StringEquals"]) == (f"{TASKS[task]['ResultPath']}.status", RATE_LIMITED)
    assert wait["Type"] == "Wait" and wait["SecondsPath"] == f"{TASKS[task]['ResultPath']}.retry_after_s"
    assert wait["Next"] == task
    assert STATES[choice["Default"]]["Type"] == "Task"


@pytest.mark.parametrize(("choice", "variable"), [("Anything to write?", "$.last_stage.outcome"),
                                                  ("Anything to deliver?", "$.assessment.outcome")])
def test_a_run_with_nothing_to_do_goes_straight_to_completion(choice: str, variable: str) -> None:
    (rule,) = STATES[choice]["Choices"]
    assert (rule["Variable"], rule["StringEquals"]) == (variable, RunOutcome.NOTHING_TO_DO.value)
    assert rule["Next"] == "Complete run"
    assert STAGE_OF_TASK["Complete run"] == Stage.COMPLETE


def test_each_stage_is_worked_on_by_one_task_state_and_each_effect_in_its_stage() -> None:
    effects = {name for name in TASKS if "effect" in TASKS[name]["Parameters"]}
    assert sorted(stage for name, stage in STAGE_OF_TASK.items() if name not in effects | BUILD_WAIT_STATES) == sorted(
        Stage)
    assert all(STAGE_OF_TASK[name] == EFFECTS[TASKS[name]["Parameters"]["effect"]].stage for name in effects)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_field_a_task_sends_is_one_its_handler_reads(name: str) -> None:
    parameters = TASKS[name]["Parameters"]
    sent = {field.removesuffix(".$") for field in parameters.get("Payload", parameters)}
    event = {"${ClassifyFunctionArn}": FailureEvent, "${EffectFunctionArn}": EffectEvent,
             "${WatchBuildFunctionArn}": BuildWatchEvent}.get(
        parameters.get("FunctionName", TASKS[name]["Resource"]), StageEvent)
    assert sent <= set(event.model_fields)
