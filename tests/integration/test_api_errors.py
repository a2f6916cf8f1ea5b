"""Bad input gets a 4xx whose message says what is wrong, never a stack trace."""
from __future__ import annotations

import tempfile

import pytest

from agentledger.adapters.dynamodb_ledger import encode_cursor
from tests.stack_driver import REQUESTER

pytestmark = pytest.mark.integration
UNKNOWN = "/runs/run-00000000000000000000"


@pytest.mark.parametrize(("method", "path", "body", "query", "status", "fragment"), [
    ("GET", "/runs", None, {"status": "bogus"}, 422, "query.status"),
    ("GET", "/runs", None, {"limit": "0"}, 422, "greater than or equal to 1"),
    ("GET", "/runs", None, {"cursor": "garbage!!"}, 400, "cursor is not one this API returned"),
    ("GET", "/runs/not-a-run", None, None, 422, "path.run_id"),
    ("POST", f"{UNKNOWN}/resume", None, None, 404, "no run with id"),
    ("POST", f"{UNKNOWN}/review", {"decision": "approve", "plan_digest": "x"}, None, 404, "no run with id"),
    ("POST", f"{UNKNOWN}/review", {"decision": "maybe", "plan_digest": "x"}, None, 422, "body.decision"),
    ("POST", "/runs", {"repository": f"{tempfile.gettempdir()}/agentledger-no-such-repository", "request": "x"},
     None, 422, "is not a directory"),
    ("POST", "/runs", {"repository": "/etc", "request": "x"}, None, 422, "outside the directories this server reads"),
    ("POST", "/runs", {"repository": "/tmp", "request": "x", "environment": "bad env"}, None, 422,
     "body.environment"),
    ("POST", "/no-such-route", None, None, 404, "no such route"),
])
def test_bad_requests_are_refused_with_a_message(runtime, method, path, body, query, status, fragment):
    response = runtime.call_api(method, path, body=body, query=query, caller=REQUESTER)
    assert response.status == status, response.body
    assert fragment in response.json()["message"]
    assert "Traceback" not in response.body


def test_a_body_that_is_not_json_is_refused(runtime):
    response = runtime.call_api("POST", "/runs", raw_body="{not json", caller=REQUESTER)
    assert response.status == 422 and "JSON" in response.json()["message"]


@pytest.mark.parametrize(("path", "body"), [
    ("/runs", {"repository": "/tmp", "request": "x"}),
    ("/runs/run-00000000000000000000/review", {"decision": "approve", "plan_digest": "x"}),
    ("/runs/run-00000000000000000000/resume", None),
])
def test_a_write_whose_caller_authorization_did_not_name_is_forbidden(runtime, path, body):
    response = runtime.call_api("POST", path, body=body)
    assert response.status == 403, response.body
    assert "no caller identity" in response.json()["message"]


def test_a_body_nested_too_deep_is_a_400_not_a_crash(runtime):
    deep = '{"repository": "/tmp", "request": ' + "[" * 5000 + "]" * 5000 + "}"
    response = runtime.call_api("POST", "/runs", raw_body=deep, caller=REQUESTER)
    assert response.status == 400, response.body
    assert "nested too deep" in response.json()["message"]


def test_a_body_sent_as_another_content_type_is_a_415(runtime):
    response = runtime.call_api("POST", "/runs", body={"repository": "/tmp", "request": "x"},
                                headers={"Content-Type": "text/plain"}, caller=REQUESTER)
    assert response.status == 415, response.body
    assert "application/json" in response.json()["message"]


def test_a_forged_cursor_is_refused_and_an_issued_one_pages_on(runtime, tmp_path):
    forged = encode_cursor({"pk": "run#run-00000000000000000000", "sk": "run", "entity": "run",
                            "created_key": "9999"})
    refused = runtime.call_api("GET", "/runs", query={"cursor": forged}, caller=REQUESTER)
    assert refused.status == 400 and "cursor is not one this API returned for this query" in refused.json()["message"]

    for number in range(3):
        (tmp_path / f"r{number}").mkdir()
        created = runtime.call_api("POST", "/runs", body={"repository": str(tmp_path / f"r{number}"), "request": "x"},
                                   headers={"Idempotency-Key": f"cursor-{tmp_path.name}-{number}"}, caller=REQUESTER)
        assert created.status == 201
        runtime.wait_for_execution(created.json()["execution"])  # nothing to do: it ends at once
    first = runtime.call_api("GET", "/runs", query={"limit": "1"}, caller=REQUESTER).json()
    assert first["next_cursor"]
    second = runtime.call_api("GET", "/runs", query={"limit": "1", "cursor": first["next_cursor"]},
                              caller=REQUESTER).json()
    assert second["runs"] and second["runs"][0]["run_id"] != first["runs"][0]["run_id"]
    # Issued for the unfiltered list: replayed on another index, a 400, never a 500.
    replayed = runtime.call_api("GET", "/runs", query={"limit": "1", "cursor": first["next_cursor"],
                                                       "status": "complete"}, caller=REQUESTER)
    assert replayed.status == 400 and "for this query" in replayed.json()["message"], replayed.body


@pytest.mark.parametrize("body", [
    '{"repository": "/tmp", "request": "x", "limit": ' + "9" * 5000 + "}",
    '{"repository": "/tmp", "request": ' + "1" * 5000 + "}",
])
def test_a_number_too_long_for_any_value_is_a_400_that_names_no_interpreter_internal(runtime, body):
    response = runtime.call_api("POST", "/runs", raw_body=body, caller=REQUESTER)
    assert response.status == 400, response.body
    message = response.json()["message"]
    assert "digits" in message and "set_int_max_str_digits" not in message and "integer string" not in message


def test_a_local_path_outside_the_roots_is_refused_without_naming_the_roots(runtime, tmp_path):
    response = runtime.call_api("POST", "/runs", body={"repository": "/etc", "request": "x"}, caller=REQUESTER)
    assert response.status in (400, 422), response.body
    message = response.json()["message"]
    assert "outside the directories this server reads" in message
    assert not [root for root in runtime.repository_roots if str(root) in message], message
