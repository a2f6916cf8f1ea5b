"""The errors the API answers with a status of their own are declared once, in agentledger.errors,
each with its status; the OpenAPI document the api function serves promises every one of those
statuses, and the api function answers each error with it."""
from __future__ import annotations

import json

import pytest

from agentledger import errors
from agentledger.handlers.api import _refused, app


def statused_errors() -> list[type[errors.LedgerError]]:
    return [value for value in vars(errors).values() if isinstance(value, type)
            and issubclass(value, errors.LedgerError) and value.http_status is not None]


def test_every_status_an_error_carries_is_one_the_openapi_document_promises() -> None:
    document = json.loads(app.get_openapi_json_schema())
    promised = {int(status) for path in document["paths"].values() for operation in path.values()
                for status in operation["responses"]}
    assert {error.__name__: int(error.http_status) for error in statused_errors()
            if error.http_status not in promised} == {}


@pytest.mark.parametrize("error", statused_errors(), ids=lambda error: error.__name__)
def test_the_api_answers_each_error_with_its_status_and_its_message(error: type[errors.LedgerError]) -> None:
    answered = _refused(error("what the caller reads"))
    assert answered.status_code == error.http_status
    assert answered.body == {"error": error.http_status.phrase, "message": "what the caller reads"}


def test_an_error_without_a_status_is_the_api_s_defect_and_says_nothing_of_itself() -> None:
    answered = _refused(errors.ConcurrentModificationError("internal detail"))
    assert answered.status_code == 500 and "internal detail" not in json.dumps(answered.body)
