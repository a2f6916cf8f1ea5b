"""A stage waits for its build's end, told by CodeBuild's state-change event; when that event never
comes, the parked wait times out and the stage looks itself: one late look, no lost run, no second
build."""
from __future__ import annotations

import pytest

from agentledger.errors import BuildWaitNotNeededError
from agentledger.workflow import builds
from tests.samples import write_sample_repository

pytestmark = pytest.mark.reliability

SLOW_SUITE_S = 4  # the builds outlast the parking, so a wait really waits
FALLBACK_S = 2


def test_a_build_end_that_never_arrives_costs_a_late_look_not_the_run(driver, runtime, tmp_path, monkeypatch):
    repository = write_sample_repository(tmp_path / "slow", packaged=False)
    (repository / "tests" / "test_slow.py").write_text(
        f"import time\n\n\ndef test_slow():\n    time.sleep({SLOW_SUITE_S})\n")
    monkeypatch.setattr(builds, "BUILD_END_FALLBACK_SECONDS", FALLBACK_S)
    monkeypatch.setattr(runtime.codebuild, "on_ended", None)  # EventBridge delivers nothing

    run_id = driver.start(repository)
    assert driver.wait(run_id)["run"]["status"] == "awaiting_review"

    history = runtime.execution_history(f"{run_id}-start")
    timed_out = [event for event in history if event["type"] == "TaskTimedOut"]
    assert timed_out, "no parked wait timed out: the builds ended before the stages parked"
    assert not [event for event in history if event["type"] == "TaskSucceeded"
                and "woken_by" in event["taskSucceededEventDetails"]["output"]]
    assert [len(runtime.codebuild.builds_for(run_id, stage)) for stage in ("execute", "verify")] == [1, 1]
    view = driver.view(run_id)
    assert view["stages"]["verify"]["attempt"] == 1 and view["stages"]["execute"]["attempt"] == 1


def test_each_build_end_wakes_its_stage_once_whatever_the_build_takes(driver, runtime, tmp_path):
    repository = write_sample_repository(tmp_path / "slow", packaged=False)
    (repository / "tests" / "test_slow.py").write_text(
        f"import time\n\n\ndef test_slow():\n    time.sleep({SLOW_SUITE_S})\n")

    run_id = driver.start(repository)
    assert driver.wait(run_id)["run"]["status"] == "awaiting_review"

    history = runtime.execution_history(f"{run_id}-start")
    entered = [event["stateEnteredEventDetails"]["name"] for event in history if event["type"].endswith("StateEntered")]
    # Each stage looks twice: to start its build and, woken by its end, to read it.
    assert (entered.count("Write tests"), entered.count("Run test suite")) == (2, 2)
    woken = [event for event in history if event["type"] == "TaskSucceeded"
             and "woken_by" in event["taskSucceededEventDetails"]["output"]]
    not_needed = [event for event in history if event["type"] == "TaskFailed"
                  and event["taskFailedEventDetails"]["error"] == BuildWaitNotNeededError.__name__]
    # A wait parked after its build ended (the machine busy) is not needed; every other one is woken.
    assert len(woken) + len(not_needed) == 2 and woken
    started = {build.build_id for stage in ("execute", "verify")
               for build in runtime.codebuild.builds_for(run_id, stage)}
    assert all(any(build_id in event["taskSucceededEventDetails"]["output"] for build_id in started) for event in woken)
    assert not [event for event in history if event["type"] == "TaskTimedOut"]
