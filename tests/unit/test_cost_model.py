"""The cost model of `make bench` (tests/bench/cost_model.py): its arithmetic on hand-built counts,
and a price table that cannot leave a service silently free."""
from __future__ import annotations

from collections import Counter
from datetime import date
from typing import Any

import pytest

from tests.bench.cost_model import (
    KEEPER_PASSES_A_WEEK,
    REQUEST_PRICES,
    RUNS_AT_SCALE,
    BilledInvocation,
    KeeperPass,
    Line,
    RunUsage,
    alternatives,
    build_lines,
    goal,
    load_prices,
    polls_per_build,
    review_week_lines,
    tables,
    unpriced,
    workflow_lines,
)
from tests.bench.request_counter import SERVICES, Request

PRICES = load_prices()
# One pass of the review keeper with one review pending: it lists the run, loads it, heartbeats its task.
KEEPER = KeeperPass(Counter({Request("ReviewKeeperFunction", "dynamodb", "Query"): 2,
                             Request("ReviewKeeperFunction", "sfn", "SendTaskHeartbeat"): 1}),
                    BilledInvocation("review keeper", 0.05, 256, "arm64"))


def usage(**counts: Any) -> RunUsage:
    """A run that used nothing but `counts`."""
    nothing: dict[str, Any] = {
        "requests": Counter(), "state_transitions": 0, "executions": 0, "invocations": (), "api_invocations": 0,
        "waits": 0, "tokens": 0, "build_seconds": (), "stored_bytes": 0, "log_bytes": 0, "checkpoint_bytes": 0,
        "history_bytes": 0, "hours": 0.0,
    }
    return RunUsage(**{**nothing, **counts})


def the_line(lines: list[Line], price: str) -> Line:
    [line] = [line for line in lines if line.price == price]
    return line


def test_a_thousand_state_transitions_cost_two_and_a_half_cents() -> None:
    line = the_line(workflow_lines(usage(state_transitions=1_000), PRICES), "sfn-state-transition")
    assert line.usd == pytest.approx(0.025)


def test_billed_duration_rounds_up_to_the_millisecond_times_memory_in_gb() -> None:
    assert BilledInvocation("Plan tests", 0.1001, 1024, "arm64").gb_seconds == pytest.approx(0.101)
    assert BilledInvocation("Plan tests", 0.1, 1024, "arm64").gb_seconds == pytest.approx(0.1)
    assert BilledInvocation("Plan tests", 0.0004, 512, "arm64").gb_seconds == pytest.approx(0.0005)


def test_duration_is_priced_at_each_functions_architecture() -> None:
    invocations = (BilledInvocation("Plan tests", 1.0, 1024, "arm64"),
                   BilledInvocation("Plan tests", 2.0, 512, "x86_64"))
    lines = workflow_lines(usage(invocations=invocations), PRICES)
    assert the_line(lines, "lambda-gb-second-arm64").usd == pytest.approx(0.0000133334)
    assert the_line(lines, "lambda-gb-second-x86_64").usd == pytest.approx(0.0000166667)
    assert the_line(lines, "lambda-request").quantity == 2


def test_the_api_invocations_are_lambda_requests_api_gateway_requests_and_traces() -> None:
    lines = workflow_lines(usage(api_invocations=2, executions=1), PRICES)
    assert the_line(lines, "lambda-request").quantity == 2
    assert the_line(lines, "apigateway-rest-request").usd == pytest.approx(2 * 3.5e-6)
    assert the_line(lines, "xray-trace-recorded").quantity == 3


def test_requests_are_priced_by_operation() -> None:
    requests = Counter({Request("PlanFunction", "dynamodb", "GetItem"): 4,
                        Request("PlanFunction", "dynamodb", "PutItem"): 2,
                        Request("PlanFunction", "s3", "GetObject"): 3})
    lines = workflow_lines(usage(requests=requests), PRICES)
    assert the_line(lines, "dynamodb-read-request-unit").usd == pytest.approx(4 * 0.125e-6)
    assert the_line(lines, "dynamodb-write-request-unit").usd == pytest.approx(2 * 0.625e-6)
    assert the_line(lines, "s3-get-request").quantity == 3


def test_the_test_builds_are_kept_apart_and_billed_by_the_minute_rounded_up_per_build() -> None:
    counted = usage(build_seconds=(61.0, 5.0))
    [builds] = build_lines(counted, PRICES)
    assert (builds.quantity, builds.usd) == (3, pytest.approx(3 * 0.005))
    assert not [line for line in workflow_lines(counted, PRICES) if line.price == builds.price]


def test_a_thousand_runs_cost_a_thousand_times_one() -> None:
    counted = usage(state_transitions=41, invocations=(BilledInvocation("Plan tests", 0.25, 256, "arm64"),),
                    build_seconds=(30.0,))
    [cost, _] = tables(counted, KEEPER, PRICES)
    for row in cost.rows:
        one_run, at_scale = float(str(row[2])), float(str(row[3]))
        assert at_scale == pytest.approx(one_run * RUNS_AT_SCALE, abs=0.001), row
    [with_builds] = [row for row in cost.rows if row[0] == "run with its test builds"]
    assert float(str(with_builds[2])) == pytest.approx(sum(line.usd for line in workflow_lines(counted, PRICES))
                                                       + 0.005, abs=1e-6)


def test_the_largest_line_is_named() -> None:
    [cost, _] = tables(usage(state_transitions=1_000, api_invocations=1), KEEPER, PRICES)
    assert any(note.startswith("largest line of the workflow: Step Functions state transitions") for note in cost.notes)


def test_waiting_for_the_builds_is_priced_and_compared_with_polling_builds_of_minutes() -> None:
    looks = tuple(BilledInvocation("Run test suite", 0.2, 512, "arm64") for _ in range(3))
    [cost, _] = tables(usage(state_transitions=30, invocations=looks, waits=2, build_seconds=(20.0,)), KEEPER,
                      PRICES)
    [waiting] = [note for note in cost.notes if note.startswith("waiting for the builds: 2 looks here")]
    assert f"a 10-minute build was looked at {polls_per_build(600)} times" in waiting


def test_a_review_pending_a_week_costs_every_pass_of_the_keeper_in_that_week() -> None:
    per_pass = 0.2e-6 + 0.05 * 0.25 * 0.0000133334 + 2 * 0.125e-6  # invocation, duration, two reads
    assert KEEPER_PASSES_A_WEEK == 672  # every 15 minutes
    assert sum(line.usd for line in review_week_lines(KEEPER, PRICES)) == pytest.approx(672 * per_pass)
    [cost, _] = tables(usage(state_transitions=10), KEEPER, PRICES)
    assert [row[0] for row in cost.rows if "apart" in str(row[0])] == ["CodeBuild test builds (apart)",
                                                                      "a review pending a week (apart)"]


def test_every_price_has_a_date_a_source_and_says_where_it_was_confirmed() -> None:
    for key, price in PRICES.items():
        assert date.fromisoformat(price.checked), key
        assert price.source.startswith("https://"), key
        assert price.confirmed in ("vendor", "secondary", "unconfirmed"), key
        assert price.usd >= 0 and price.unit, key


def test_every_service_the_bench_counts_requests_for_has_a_price() -> None:
    assert set(SERVICES) <= set(REQUEST_PRICES)
    for operations, default in REQUEST_PRICES.values():
        assert {default, *operations.values()} <= set(PRICES)


def test_a_service_without_a_price_is_reported_not_free() -> None:
    counted = usage(requests=Counter({Request("PlanFunction", "new-service", "Call"): 3}))
    assert unpriced(workflow_lines(counted, PRICES)) == ["new-service"]
    [cost, _] = tables(counted, KEEPER, PRICES)
    [(_, target)] = cost.targets
    assert (target.goal, target.met) == (goal(), False)
    assert any("NOT PRICED" in note and "new-service" in note for note in cost.notes)


def test_polls_follow_the_interval_verify_chose_when_it_polled() -> None:
    assert polls_per_build(0) == 0
    assert polls_per_build(2) == 1  # looked at once, after the shortest interval
    assert polls_per_build(600) > polls_per_build(60) > polls_per_build(10)


def test_the_alternatives_count_the_operations_the_run_would_need() -> None:
    steps = tuple(BilledInvocation("Plan tests", 0.1, 256, "arm64") for _ in range(10))
    counted = usage(state_transitions=40, invocations=steps, waits=2, tokens=1)
    step_functions, durable, temporal = alternatives(counted, PRICES)
    assert step_functions.usd == pytest.approx(40 * 25e-6)
    # A start, ten steps, two waits and a callback; the orchestrator resumes after each wait and the callback.
    assert durable.usd == pytest.approx(14 * 8e-6 + 3 * 0.2e-6)
    # A start, ten activities, two timers, and the review's signal and timeout timer.
    assert temporal.usd == pytest.approx(15 * 50e-6)
