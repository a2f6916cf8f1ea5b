"""What the API accepts, and the names it derives for runs and executions."""
from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from agentledger.api_contract import RUN_ID_PATTERN, CreateRunRequest, ReviewRequest, run_id_for
from agentledger.service import resume_execution_name, start_execution_name

EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")  # a Step Functions execution name


def create(**fields: object) -> CreateRunRequest:
    body: dict[str, object] = {"repository": "/repos/calc", "request": "add tests for calc"}
    body.update(fields)
    return CreateRunRequest.model_validate(body)


# -- CreateRunRequest -----------------------------------------------------------------------------
def test_a_minimal_request_defaults_to_dev_and_no_revision() -> None:
    body = create()
    assert (body.environment, body.revision) == ("dev", None)


@pytest.mark.parametrize("field", ["repository", "request"])
@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
def test_a_blank_repository_or_request_is_refused(field: str, value: str) -> None:
    with pytest.raises(ValidationError) as raised:
        create(**{field: value})
    assert raised.value.errors()[0]["loc"] == (field,)


@pytest.mark.parametrize("field", ["repository", "request"])
def test_a_missing_repository_or_request_is_refused(field: str) -> None:
    body = {"repository": "/repos/calc", "request": "add tests"}
    del body[field]
    with pytest.raises(ValidationError):
        CreateRunRequest.model_validate(body)


@pytest.mark.parametrize("environment", ["dev", "prod", "staging-eu_1.2"])
def test_plain_environment_names_are_accepted(environment: str) -> None:
    assert create(environment=environment).environment == environment


@pytest.mark.parametrize("environment", ["", "two words", "dev\n", "prod/../x", "ümlaut", "a;b", "x" * 65])
def test_odd_environment_names_are_refused(environment: str) -> None:
    with pytest.raises(ValidationError) as raised:
        create(environment=environment)
    assert raised.value.errors()[0]["loc"] == ("environment",)


@pytest.mark.parametrize(("field", "limit"), [("repository", 1024), ("request", 4000), ("revision", 200)])
def test_over_long_fields_are_refused(field: str, limit: int) -> None:
    assert getattr(create(**{field: "a" * limit}), field) == "a" * limit
    with pytest.raises(ValidationError) as raised:
        create(**{field: "a" * (limit + 1)})
    assert raised.value.errors()[0]["loc"] == (field,)


# -- ReviewRequest --------------------------------------------------------------------------------
@pytest.mark.parametrize("decision", ["approve", "request_changes"])
def test_a_review_approves_or_requests_changes(decision: str) -> None:
    assert ReviewRequest(decision=decision, plan_digest="sha256:abc").decision == decision


@pytest.mark.parametrize("decision", ["reject", "APPROVE", "approved", "approve\n", " approve", "", "approve|x"])
def test_any_other_review_decision_is_refused(decision: str) -> None:
    with pytest.raises(ValidationError) as raised:
        ReviewRequest(decision=decision, plan_digest="sha256:abc")
    assert raised.value.errors()[0]["loc"] == ("decision",)


def test_a_review_must_name_the_plan_it_approves() -> None:
    with pytest.raises(ValidationError):
        ReviewRequest(decision="approve", plan_digest="")
    with pytest.raises(ValidationError):
        ReviewRequest.model_validate({"decision": "approve"})


def test_a_review_comment_is_bounded() -> None:
    with pytest.raises(ValidationError):
        ReviewRequest(decision="request_changes", plan_digest="sha256:abc", comment="x" * 4001)


ALICE = "arn:aws:iam::123456789012:user/alice"


# -- run ids ----------------------------------------------------------------------------------------
def test_the_same_idempotency_key_always_names_the_same_run() -> None:
    assert run_id_for("ticket-42", ALICE) == run_id_for("ticket-42", ALICE)


def test_another_callers_same_key_names_another_run() -> None:
    assert run_id_for("ticket-42", ALICE) != run_id_for("ticket-42", "arn:aws:iam::123456789012:user/bob")


def test_different_idempotency_keys_name_different_runs() -> None:
    ids = {run_id_for(f"ticket-{n}", ALICE) for n in range(200)}
    assert len(ids) == 200


@pytest.mark.parametrize("key", [None, ""])
def test_without_a_key_every_run_is_new(key: str | None) -> None:
    assert len({run_id_for(key, ALICE) for _ in range(50)}) == 50


@pytest.mark.parametrize("key", [None, "", "ticket-42", "ÜNICODE ключ 🔑", "x" * 10_000, "../../etc/passwd"])
def test_run_ids_match_the_api_path_pattern(key: str | None) -> None:
    assert re.match(RUN_ID_PATTERN, run_id_for(key, ALICE))


# -- execution names ------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [None, "ticket-42"])
def test_execution_names_are_valid_step_functions_names(key: str | None) -> None:
    run_id = run_id_for(key, ALICE)
    names = [start_execution_name(run_id), *(resume_execution_name(run_id, n) for n in (1, 2, 10, 999_999))]
    for name in names:
        assert EXECUTION_NAME.match(name), name
    assert len(set(names)) == len(names)


def test_execution_names_are_deterministic_so_a_repeated_resume_starts_one_execution() -> None:
    run_id = run_id_for("ticket-42", ALICE)
    assert resume_execution_name(run_id, 3) == resume_execution_name(run_id, 3)
    assert start_execution_name(run_id) == start_execution_name(run_id)


def test_execution_names_of_different_runs_differ() -> None:
    a, b = run_id_for("ticket-1", ALICE), run_id_for("ticket-2", ALICE)
    assert start_execution_name(a) != start_execution_name(b)
    assert resume_execution_name(a, 1) != resume_execution_name(b, 1)


def test_execution_names_carry_the_run_id() -> None:
    # The console lists executions by name: each one says which run it worked on.
    run_id = run_id_for("ticket-42", ALICE)
    assert start_execution_name(run_id).startswith(run_id)
    assert resume_execution_name(run_id, 1).startswith(run_id)
