"""The OpenAPI document the API serves declares what each route really answers: every status it
documents that a request can provoke is provoked here, through the local HTTP API as a client
sends it, and each answer's body is the one the document declares for that status."""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import pytest
import requests
import schemathesis

from agentledger.adapters.dynamodb_ledger import LedgerStore
from agentledger.limits import StartRate
from agentledger.local.principals import write_profiles
from agentledger.local.runtime import REGION
from agentledger.local.server import MAX_BODY_BYTES, LocalApiServer
from agentledger.records import new_decision
from agentledger.states import DecisionKind
from tests.samples import write_sample_repository
from tests.signing import SignedBy
from tests.stack_driver import Driver

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

REQUESTER, REVIEWER, OPERATOR = "agentledger-requester", "agentledger-reviewer", "agentledger-operator"
UNKNOWN_RUN = "run-00000000000000000000"
# What the API answers to a defect, its own or a dependency's: no request, well-formed or not, provokes one.
DEFECT_STATUSES = {500, 502}


@dataclass(frozen=True)
class PreparedRuns:
    finished: str  # its execution ended: nothing to do in an empty repository
    awaiting_review: str
    plan_digest: str
    needs_person: str  # every attempt of its first stage crashed
    to_cancel: str  # running, or at review by the time it is cancelled


@dataclass
class Api:
    url: str
    profiles: Path
    runs: PreparedRuns
    repositories: Path

    def send(self, method: str, path: str, *, signed_by: str | None = REQUESTER, json: Any = None,
             data: bytes | None = None, headers: dict[str, str] | None = None,
             params: dict[str, str] | None = None) -> requests.Response:
        auth = SignedBy(self.url, signed_by, self.profiles) if signed_by else None
        return requests.request(method, self.url + path, json=json, data=data, headers=headers, params=params,
                                auth=auth, timeout=60)

    def empty_repository(self) -> str:
        root = self.repositories / uuid.uuid4().hex
        root.mkdir()
        return str(root)


Provoke = Callable[[Api, str, str], requests.Response]  # (api, method, a concrete path) → the answer


def _not_utf8(api: Api, method: str, path: str) -> requests.Response:
    return api.send(method, path, data=b'{"request": "\xff"}', headers={"Content-Type": "application/json"})


def _unsigned(api: Api, method: str, path: str) -> requests.Response:
    return api.send(method, path, signed_by=None, json={})


def _too_large(api: Api, method: str, path: str) -> requests.Response:
    # Refused on its headers alone, so the body is never sent.
    return api.send(method, path, headers={"Content-Length": str(MAX_BODY_BYTES + 1)})


def _not_json(api: Api, method: str, path: str) -> requests.Response:
    return api.send(method, path, data=b"{}", headers={"Content-Type": "text/plain"})


EVERY_ROUTE: dict[int, Provoke] = {400: _not_utf8, 403: _unsigned, 413: _too_large, 415: _not_json}


def _create_twice_with_one_key(api: Api, method: str, path: str) -> requests.Response:
    key, repository = str(uuid.uuid4()), api.empty_repository()
    first = api.send(method, path, json={"repository": repository, "request": "x"}, headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.text
    return api.send(method, path, json={"repository": repository, "request": "y"}, headers={"Idempotency-Key": key})


# The API's start rate, smaller here so that a few starts exceed it (the stage's is START_RATE).
START_RATE = StartRate(per_s=0.1, burst=10)


def _over_the_start_rate(api: Api, method: str, path: str) -> requests.Response:
    """Starts sent one after another until the start rate refuses one; their bodies do not validate,
    so none of those let through starts a run either."""
    for _ in range(START_RATE.burst + 1):
        response = api.send(method, path, json={"request": "no repository"})
        if response.status_code == 429:
            assert int(response.headers["Retry-After"]) >= 1
            return response
    raise AssertionError(f"{START_RATE.burst + 1} starts in a row were all let through")


def _review(decision: str, signed_by: str, run: Callable[[PreparedRuns], str]) -> Provoke:
    return lambda api, method, _: api.send(method, f"/runs/{run(api.runs)}/review", signed_by=signed_by,
                                           json={"decision": decision, "plan_digest": api.runs.plan_digest})


# Each route's own statuses, in the order they are provoked (a self-approval is refused before the
# reviewer's approval ends the review).
ROUTES: dict[tuple[str, str], dict[int, Provoke]] = {
    ("POST", "/runs"): {
        201: lambda api, method, path: api.send(method, path, json={"repository": api.empty_repository(),
                                                                     "request": "x"}),
        409: _create_twice_with_one_key,
        422: lambda api, method, path: api.send(method, path, json={"repository": "/etc", "request": "x"}),
        429: _over_the_start_rate,
    },
    ("POST", "/uploads"): {
        201: lambda api, method, path: api.send(method, path, json={"sha256": "0" * 64, "size": 10}),
        422: lambda api, method, path: api.send(method, path, json={"sha256": "not hex", "size": 10}),
    },
    ("GET", "/runs"): {
        200: lambda api, method, path: api.send(method, path),
        400: lambda api, method, path: api.send(method, path, params={"cursor": "forged.cursor"}),
        422: lambda api, method, path: api.send(method, path, params={"limit": "0"}),
    },
    ("GET", "/runs/{run_id}"): {
        200: lambda api, method, _: api.send(method, f"/runs/{api.runs.finished}", signed_by=OPERATOR),
        404: lambda api, method, path: api.send(method, path),
        422: lambda api, method, _: api.send(method, "/runs/not-a-run"),
    },
    ("POST", "/runs/{run_id}/review"): {
        403: _review("approve", REQUESTER, lambda runs: runs.awaiting_review),
        200: _review("approve", REVIEWER, lambda runs: runs.awaiting_review),
        404: _review("approve", REVIEWER, lambda runs: UNKNOWN_RUN),
        409: _review("approve", REVIEWER, lambda runs: runs.finished),
        422: lambda api, method, path: api.send(method, path, signed_by=REVIEWER,
                                                json={"decision": "maybe", "plan_digest": "x"}),
    },
    ("POST", "/runs/{run_id}/resume"): {
        200: lambda api, method, _: api.send(method, f"/runs/{api.runs.needs_person}/resume", signed_by=OPERATOR),
        404: lambda api, method, path: api.send(method, path, signed_by=OPERATOR),
        409: lambda api, method, _: api.send(method, f"/runs/{api.runs.finished}/resume", signed_by=OPERATOR),
        422: lambda api, method, _: api.send(method, "/runs/not-a-run/resume", signed_by=OPERATOR),
    },
    ("POST", "/runs/{run_id}/cancel"): {
        200: lambda api, method, _: api.send(method, f"/runs/{api.runs.to_cancel}/cancel", signed_by=OPERATOR,
                                             json={"reason": "not needed any more"}),
        404: lambda api, method, path: api.send(method, path, signed_by=OPERATOR, json={}),
        409: lambda api, method, _: api.send(method, f"/runs/{api.runs.finished}/cancel", signed_by=OPERATOR, json={}),
        422: lambda api, method, _: api.send(method, "/runs/not-a-run/cancel", signed_by=OPERATOR, json={}),
    },
}


@pytest.fixture(scope="module")
def api(runtime, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    repositories = tmp_path_factory.mktemp("repositories")
    driver = Driver(runtime)
    finished = driver.start(_directory(repositories / "empty"))
    awaiting = driver.start(write_sample_repository(repositories / "sample", packaged=False))
    needs_person = driver.start(_directory(repositories / "crashing"), crash="inspect:before_work")
    to_cancel = driver.start(write_sample_repository(repositories / "to-cancel", packaged=False))
    assert driver.wait(finished)["run"]["status"] == "complete"
    waiting = driver.wait(awaiting)
    assert waiting["run"]["status"] == "awaiting_review"
    assert driver.wait(needs_person)["run"]["status"] == "needs_person"
    runs = PreparedRuns(finished, awaiting, waiting["review"]["plan_digest"], needs_person, to_cancel)

    profiles = tmp_path_factory.mktemp("profiles")
    write_profiles(profiles, runtime.principals)
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0, start_rate=START_RATE).start()
    yield Api(server.url, profiles, runs, repositories)
    server.stop()


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.fixture(scope="module")
def document(api: Api) -> dict[str, Any]:
    response = api.send("GET", "/openapi.json")
    assert response.status_code == 200, response.text
    return response.json()


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], set[int]]:
    return {(method.upper(), path): {int(status) for status in operation["responses"]}
            for path, operations in document["paths"].items() for method, operation in operations.items()}


def test_the_document_declares_what_requests_provoke_and_what_a_defect_answers(document: dict[str, Any]) -> None:
    declared = _operations(document)

    assert set(declared) == set(ROUTES)
    for route, statuses in declared.items():
        assert statuses == set(EVERY_ROUTE) | set(ROUTES[route]) | DEFECT_STATUSES, route


def test_every_error_is_documented_with_the_one_error_body(document: dict[str, Any]) -> None:
    for operation in (op for operations in document["paths"].values() for op in operations.values()):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}


@pytest.mark.parametrize("route", list(ROUTES), ids=" ".join)
def test_each_status_a_route_documents_is_what_it_answers_with_the_documented_body(
        api: Api, document: dict[str, Any], route: tuple[str, str]) -> None:
    method, path = route
    operation = schemathesis.openapi.from_dict(document)[path][method]
    concrete = path.replace("{run_id}", UNKNOWN_RUN)
    for status, provoke in {**ROUTES[route], **EVERY_ROUTE}.items():
        response = provoke(api, method, concrete)

        assert response.status_code == status, (status, response.text)
        assert response.headers["Content-Type"].startswith("application/json")
        operation.validate_response(response)
        assert "Traceback" not in response.text


def test_a_record_the_api_cannot_show_is_a_500_with_the_documented_body_not_a_400(
        api: Api, document: dict[str, Any], runtime) -> None:
    # pydantic's ValidationError is a ValueError, which the API otherwise answers as the caller's 400.
    driver = Driver(runtime)
    run_id = driver.start(_directory(api.repositories / "corrupted"), crash="inspect:before_work")
    assert driver.wait(run_id)["run"]["status"] == "needs_person"
    ledger = LedgerStore(runtime.output("LedgerTableName"), boto3.resource("dynamodb", region_name=REGION))
    ledger.write(ledger.get_run(run_id), reason="a handoff record of another shape",
                 records=[new_decision(DecisionKind.HANDOFF, "handed off", {"kind": ["not", "a", "handoff"]})])

    response = api.send("GET", f"/runs/{run_id}", signed_by=OPERATOR)

    assert response.status_code == 500, response.text
    schemathesis.openapi.from_dict(document)["/runs/{run_id}"]["GET"].validate_response(response)
    assert response.json()["message"] == "internal error; the request id is in the logs"
