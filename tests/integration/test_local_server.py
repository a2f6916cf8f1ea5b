"""The local HTTP server itself, in process: a client that stops sending is dropped, a burst of
connections is queued, and what API Gateway would refuse gets its 4xx."""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest
import requests

from agentledger.cli.signing import request_signer
from agentledger.limits import StartRate
from agentledger.local.principals import principal_arn, write_profiles
from agentledger.local.profiles import instance_profiles_dir
from agentledger.local.server import LocalApiServer
from agentledger.local.throttles import THROTTLE_HEADER
from agentledger.service import run_id_for
from tests.signing import SignedBy

pytestmark = pytest.mark.integration


def test_a_client_that_stops_mid_request_is_disconnected_after_the_socket_timeout(runtime) -> None:
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0, socket_timeout_s=1).start()
    try:
        host, port = server.httpd.server_address[:2]
        with socket.create_connection((host, port), timeout=10) as connection:
            connection.sendall(b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
            started = time.monotonic()
            assert connection.recv(1024) == b""  # closed by the server, not answered
            assert time.monotonic() - started < 5
    finally:
        server.stop()


@pytest.fixture
def served(runtime, tmp_path):
    """The local API on a free port, and a way to send it requests signed as the requester."""
    write_profiles(tmp_path, runtime.principals)
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0).start()
    sign = request_signer(server.url, "agentledger-requester", tmp_path)

    def send(method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = sign(method, server.url + path, {"Content-Type": "application/json"}, body)
        request = urllib.request.Request(server.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    yield server, send
    server.stop()


def test_a_signed_header_named_with_any_http_token_character_is_accepted(served, tmp_path) -> None:
    server, _ = served
    signed = SignedBy(server.url, "agentledger-requester", tmp_path)  # the profiles `served` wrote
    response = requests.get(server.url + "/runs", headers={"X-Trace$Id*": "1"}, auth=signed, timeout=30)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("query", ["?limit=", "?status=", "?limit=&status=running"])
def test_a_blank_query_value_is_a_validation_error_not_an_absent_one(served, query: str) -> None:
    _, send = served
    status, _, body = send("GET", f"/runs{query}")
    assert status == 422, body
    assert send("GET", "/runs")[0] == 200


def test_a_body_that_is_not_utf8_is_a_400_not_a_dropped_connection(served) -> None:
    _, send = served
    status, _, body = send("POST", "/runs", b'{"repository": "\xff\xfe"}')
    assert status == 400 and json.loads(body)["message"] == "the body is not UTF-8"


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "HEAD"])
def test_unsupported_methods_are_a_405_in_json_naming_what_is_supported(served, method: str) -> None:
    server, _ = served
    request = urllib.request.Request(server.url + "/runs", method=method, headers={"Host": server.url[7:]})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 405 and raised.value.headers["Allow"] == "GET, POST"
    body = raised.value.read()
    assert (body == b"") if method == "HEAD" else json.loads(body)["message"].startswith(f"{method} is not supported")


def test_a_burst_of_connections_waits_in_the_listen_queue_instead_of_being_refused(runtime) -> None:
    # Not serving yet: every connection must wait in the kernel's queue of the listening socket.
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0)
    host, port = server.httpd.server_address[:2]
    connections = []
    try:
        for _ in range(60):
            connections.append(socket.create_connection((host, port), timeout=1.5))
        assert len(connections) == 60
    finally:
        for connection in connections:
            connection.close()
        server.httpd.server_close()


def _post(server, headers: dict[str, str], body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(server.url + "/runs", data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _run_body(tmp_path, request: str) -> bytes:
    (tmp_path / "repo").mkdir(exist_ok=True)
    return json.dumps({"repository": str(tmp_path / "repo"), "request": request}).encode()


def test_the_signature_binds_the_body_as_api_gateway_binds_it(served, tmp_path) -> None:
    server, _ = served
    sign = request_signer(server.url, "agentledger-requester", tmp_path)
    body_a, body_b = _run_body(tmp_path, "write tests"), _run_body(tmp_path, "delete everything")
    for claimed in (hashlib.sha256(body_a).hexdigest(), "UNSIGNED-PAYLOAD"):
        headers = sign("POST", server.url + "/runs", {"Content-Type": "application/json",
                                                       "X-Amz-Content-SHA256": claimed}, body_a)
        status, answer = _post(server, headers, body_b)
        assert status == 403 and "x-amz-content-sha256 must be the SHA-256 of the body" in answer["message"]


def test_an_idempotency_key_or_content_type_added_after_signing_is_refused(served, tmp_path) -> None:
    server, _ = served
    sign = request_signer(server.url, "agentledger-requester", tmp_path)
    body = _run_body(tmp_path, "write tests")
    signed = sign("POST", server.url + "/runs", {"Content-Type": "application/json"}, body)
    status, answer = _post(server, {**signed, "Idempotency-Key": "added-later"}, body)
    assert status == 400 and answer["message"].startswith("Idempotency-Key must be signed")
    without_type = sign("POST", server.url + "/runs", {}, body)
    status, answer = _post(server, {**without_type, "Content-Type": "application/json"}, body)
    assert status == 400 and answer["message"].startswith("Content-Type must be signed")


def test_another_principal_replaying_an_idempotency_key_gets_a_run_of_its_own(served, tmp_path) -> None:
    server, _ = served
    body = _run_body(tmp_path, "write tests")
    key = {"Content-Type": "application/json", "Idempotency-Key": f"shared-{tmp_path.name}"}
    runs = {}
    for profile in ("agentledger-requester", "agentledger-reviewer", "agentledger-requester"):
        status, answer = _post(server, request_signer(server.url, profile, tmp_path)(
            "POST", server.url + "/runs", dict(key), body), body)
        assert status == 201, answer
        runs.setdefault(profile, set()).add(answer["run_id"])
    assert len(runs["agentledger-requester"]) == 1  # the requester's retry: its own run again
    assert runs["agentledger-reviewer"].isdisjoint(runs["agentledger-requester"])


def test_starts_past_the_start_rate_are_a_429_with_retry_after_and_the_cli_waits_then_starts_one_run(
        runtime, tmp_path, sample_repo) -> None:
    # One start at once, then one every 5 s: the CLI, started next, meets the limit.
    server = LocalApiServer(runtime, port=0, keeper_interval_s=0, start_rate=StartRate(per_s=0.2, burst=1)).start()
    profiles = instance_profiles_dir(server.url, tmp_path)  # where the CLI looks for this API's
    write_profiles(profiles, runtime.principals)
    sign = request_signer(server.url, "agentledger-requester", profiles)
    key = str(uuid.uuid4())
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    try:
        unreadable = b'{"request": "no repository"}'  # takes the start the burst holds, and starts nothing
        request = urllib.request.Request(server.url + "/runs", data=unreadable, method="POST", headers=sign(
            "POST", server.url + "/runs", {"Content-Type": "application/json"}, unreadable))
        answers = []
        for _ in range(2):
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    answers.append((response.status, dict(response.headers), json.loads(response.read())))
            except urllib.error.HTTPError as error:
                answers.append((error.code, dict(error.headers), json.loads(error.read())))
        cli = subprocess.run([sys.executable, "-m", "agentledger.cli.main", "run", str(sample_repo),
                              "--api", server.url, "--json", "--no-wait", "--idempotency-key", key],
                             capture_output=True, text=True, timeout=120,
                             env={**environment, "AGENTLEDGER_LOCAL_CREDENTIALS_DIR": str(tmp_path)}, check=False)
    finally:
        server.stop()

    (validated, _, _), (throttled, headers, body) = answers
    assert (validated, throttled) == (422, 429)
    assert headers["Retry-After"] == "5" and body["error"] == "Too Many Requests"
    assert "Retry-After" in body["message"] and "Traceback" not in json.dumps(body)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["run_id"] == run_id_for(key, principal_arn("requester"))  # its key's one run
    [waited] = [line for line in cli.stderr.splitlines() if "429" in line]
    assert waited.startswith("agentledger: the API is throttling requests (429: too many runs started")
    assert "before sending POST /runs again (attempt 2 of 5)" in waited


def test_a_throttle_header_arms_the_throttle_for_the_run_the_request_creates(served, runtime, tmp_path) -> None:
    server, _ = served
    sign = request_signer(server.url, "agentledger-requester", tmp_path)
    body = _run_body(tmp_path, "write tests")

    def create(throttle: str) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json", THROTTLE_HEADER: throttle,
                   "Idempotency-Key": f"throttled-{tmp_path.name}-{throttle}"}
        return _post(server, sign("POST", server.url + "/runs", headers, body), body)

    status, answer = create("dynamodb:put_item")
    assert status == 400 and "dynamodb has no operation 'put_item'" in answer["message"], answer
    status, answer = create("lambda:Invoke:2")
    assert status == 201, answer
    [throttle] = [t for t in runtime.throttles.armed if t.run_id == answer["run_id"]]
    assert (throttle.service, throttle.operation, throttle.remaining + throttle.refused) == ("lambda", "Invoke", 2)
