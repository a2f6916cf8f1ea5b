"""Schemathesis against `agentledger serve`, from the OpenAPI document the API itself serves: each
operation on generated input, valid and not, then chains of operations along the document's links.
Every answer must be documented, in its declared content type and schema, and none a server error."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode, checks

from agentledger.local.profiles import instance_profiles_dir
from tests.signing import SignedBy

from .conftest import OPERATOR, PROFILES_DIR, REQUESTER, REVIEWER

pytestmark = pytest.mark.e2e

# Each operation signed by the duty that calls it; the rest by the requester. None of these callers
# requested the runs they review, so no answer here is a 403.
SIGNED_BY = {"review_run": REVIEWER, "resume_run": OPERATOR}
SETTINGS = {"derandomize": True, "database": None, "deadline": None,
            "suppress_health_check": list(hypothesis.HealthCheck)}
EXAMPLES_PER_OPERATION = 25
SCENARIOS, STEPS_PER_SCENARIO = 15, 6


def operation_id(operation: schemathesis.APIOperation) -> str:
    return operation.definition.raw["operationId"]


def signature_accepted(ctx: schemathesis.CheckContext, response: schemathesis.Response,
                       case: schemathesis.Case) -> None:
    if response.status_code == 403:
        raise AssertionError(f"a request signed by a known caller was refused: {response.text}")


CHECKS = [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
          checks.response_schema_conformance, signature_accepted]
# Refusals of the request as a whole, before the service looks at what it asks for.
UNREAD = {400, 413, 415, 422}


class Signers:
    def __init__(self, api_url: str) -> None:
        self.by_profile = {profile: SignedBy(api_url, profile, instance_profiles_dir(api_url, PROFILES_DIR))
                           for profile in (REQUESTER, REVIEWER, OPERATOR)}

    def call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
        return {"auth": self.by_profile[SIGNED_BY.get(operation_id(case.operation), REQUESTER)]}


@pytest.fixture(scope="module")
def signers(api_url: str) -> Signers:
    return Signers(api_url)


@pytest.fixture(scope="module")
def api_schema(api_url: str, signers: Signers, tmp_path_factory: pytest.TempPathFactory) -> schemathesis.BaseSchema:
    schema = schemathesis.openapi.from_url(f"{api_url}/openapi.json", auth=signers.by_profile[REQUESTER])
    repository = str(tmp_path_factory.mktemp("empty-repository"))

    @schema.hook
    def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
        # A generated path is almost never a directory the server may read: offer the run an
        # empty one too, so runs are created (and end at once, with nothing to do).
        if operation_id(context.operation) == "create_run" and isinstance(body, dict) and "repository" in body:
            return st.sampled_from([body, {**body, "repository": repository}])
        return st.just(body)

    return schema


# One Hypothesis test per operation, as `schema.parametrize()` would make them: its lazy form (the
# schema comes from a fixture, once the server is up) reads pytest's removed `Item._nodeid` on pytest 9.
def test_each_operation_answers_generated_input_as_documented(api_schema: schemathesis.BaseSchema,
                                                              signers: Signers) -> None:
    answered: defaultdict[str, set[int]] = defaultdict(set)
    for result in api_schema.get_all_operations():
        operation = result.ok()
        generated = st.one_of(*(operation.as_strategy(generation_mode=mode) for mode in GenerationMode))

        @hypothesis.given(case=generated)
        @hypothesis.settings(max_examples=EXAMPLES_PER_OPERATION, **SETTINGS)
        def answers_as_documented(case: schemathesis.Case) -> None:
            response = case.call(**signers.call_kwargs(case))
            # Called at once, inside this iteration: the loop variable is the one meant.
            answered[operation_id(operation)].add(response.status_code)  # noqa: B023
            case.validate_response(response, checks=CHECKS)

        answers_as_documented()

    # Not vacuous: for every operation, some generated input got past validation to the service.
    assert all(statuses - UNREAD for statuses in answered.values()), dict(answered)
    assert len(answered) == len(list(api_schema.get_all_operations())), dict(answered)


def test_chains_of_linked_operations_answer_as_documented(api_schema: schemathesis.BaseSchema,
                                                          signers: Signers) -> None:
    answered: defaultdict[str, set[int]] = defaultdict(set)

    class Scenario(api_schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return signers.call_kwargs(case)

        def validate_response(self, response: schemathesis.Response, case: schemathesis.Case,
                              additional_checks: Any = None, **kwargs: Any) -> None:
            answered[operation_id(case.operation)].add(response.status_code)
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None, recorder=self.recorder)

    Scenario.run(settings=hypothesis.settings(max_examples=SCENARIOS, stateful_step_count=STEPS_PER_SCENARIO,
                                              **SETTINGS))

    # Not vacuous: runs were created, and the links led to them (a generated run id is a 404).
    assert 201 in answered["create_run"] and 200 in answered["get_run"], dict(answered)
    assert 409 in answered["review_run"] and 409 in answered["resume_run"], dict(answered)
