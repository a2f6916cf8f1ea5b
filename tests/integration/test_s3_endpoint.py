"""The local stack's S3 endpoint over plain HTTP, as any process on this machine (the code under
test included) reaches it: it answers S3 and nothing else, and only what the runtime's functions
presigned, checked as S3 checks it."""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import secrets
import stat
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from agentledger.adapters.s3_artifacts import ArtifactStore
from agentledger.buildkit.layout import PROGRESS_FILE, PROGRESS_LIMIT_BYTES
from agentledger.buildkit.upload import ProgressPoster, multipart_body
from agentledger.limits import MAX_UPLOAD_BYTES
from agentledger.local import s3_endpoint
from agentledger.local.principals import write_profiles
from agentledger.local.runtime import FUNCTION_CREDENTIALS, REGION, LocalRuntime
from tests.resident_memory import memory_mib, reset_peak
from tests.stack_driver import REQUESTER

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

# A well-formed key that no one issued, and a secret that is not the one the functions sign with.
GARBAGE = Credentials("AKIAGARBAGEGARBAGE00", "garbage-secret")
WRONG_SECRET = Credentials(FUNCTION_CREDENTIALS.access_key, "not-the-secret", FUNCTION_CREDENTIALS.token)


def _send(url: str, method: str = "GET", body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _signed(method: str, url: str, service: str, credentials: Credentials, body: bytes = b"",
            headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A request signed in its Authorization header, as any SDK signs it."""
    request = AWSRequest(method=method, url=url, data=body, headers=headers or {})
    SigV4Auth(credentials, service, REGION).add_auth(request)
    return _send(url, method, body or None, dict(request.headers.items()))


def _error_code(body: bytes) -> str:
    return body.decode().split("<Code>")[1].split("</Code>")[0]


def _links(runtime: LocalRuntime, credentials: Credentials = FUNCTION_CREDENTIALS) -> Any:
    """A client signing links as the functions' link client does (handlers/assembly.py), with `credentials`."""
    assert runtime.s3_endpoint is not None
    return boto3.client("s3", region_name=REGION, endpoint_url=runtime.s3_endpoint.url,
                        aws_access_key_id=credentials.access_key, aws_secret_access_key=credentials.secret_key,
                        aws_session_token=credentials.token, config=Config(signature_version="s3v4"))


@pytest.fixture
def stored(runtime: LocalRuntime) -> tuple[str, str, bytes]:
    """An object in the artifact bucket: (bucket, key, bytes)."""
    bucket, key = runtime.output("ArtifactBucketName"), f"runs/probe-{secrets.token_hex(4)}/a b+ü.txt"
    data = b"x" * 70000  # more than one chunk of the streamed answer
    runtime.client("s3").put_object(Bucket=bucket, Key=key, Body=data)
    return bucket, key, data


def _exists(runtime: LocalRuntime, bucket: str, key: str) -> bool:
    return "Contents" in runtime.client("s3").list_objects_v2(Bucket=bucket, Prefix=key)


# --- no other service ---------------------------------------------------------------------------

def _other_service_calls(runtime: LocalRuntime) -> dict[str, tuple[str, bytes, dict[str, str]]]:
    """What moto's server answered with the ledger, the users, the token and a review's answer."""
    def json_call(target: str, document: dict[str, Any], version: str = "1.0") -> tuple[bytes, dict[str, str]]:
        return json.dumps(document).encode(), {"X-Amz-Target": target,
                                               "Content-Type": f"application/x-amz-json-{version}"}

    return {
        "ledger scan": ("dynamodb", *json_call("DynamoDB_20120810.Scan",
                                               {"TableName": runtime.output("LedgerTableName")})),
        "IAM users": ("iam", b"Action=ListUsers&Version=2010-05-08",
                      {"Content-Type": "application/x-www-form-urlencoded"}),
        "token secret": ("secretsmanager", *json_call("secretsmanager.GetSecretValue",
                                                      {"SecretId": runtime.output("GitHubTokenSecretArn")}, "1.1")),
        "executions": ("states", *json_call("AWSStepFunctions.ListExecutions",
                                            {"stateMachineArn": runtime.state_machine_arn})),
        "task answer": ("states", *json_call("AWSStepFunctions.SendTaskSuccess", {"taskToken": "t", "output": "{}"})),
    }


@pytest.mark.parametrize("credentials", [GARBAGE, FUNCTION_CREDENTIALS], ids=["garbage key", "the functions' key"])
def test_no_other_service_answers_whatever_the_signature(runtime: LocalRuntime, credentials: Credentials) -> None:
    assert runtime.s3_endpoint is not None
    for name, (service, body, headers) in _other_service_calls(runtime).items():
        status, answer = _signed("POST", runtime.s3_endpoint.url + "/", service, credentials, body, headers)
        assert (status, _error_code(answer)) == (403, "AccessDenied"), (name, answer)
        assert b"agentledger" not in answer and b"local-github-token" not in answer, name


def test_an_unsigned_or_header_signed_s3_request_is_refused(runtime: LocalRuntime,
                                                            stored: tuple[str, str, bytes]) -> None:
    assert runtime.s3_endpoint is not None
    bucket, key, data = stored
    endpoint = runtime.s3_endpoint.url
    attempts = (("GET", f"{endpoint}/{bucket}/{quote(key)}", b""), ("GET", f"{endpoint}/{bucket}", b""),
                ("PUT", f"{endpoint}/{bucket}/runs/planted.txt", b"planted"))
    for credentials in (None, GARBAGE, FUNCTION_CREDENTIALS):
        for method, target, body in attempts:
            status, answer = (_send(target, method, body or None) if credentials is None
                              else _signed(method, target, "s3", credentials, body))
            assert status == 403 and _error_code(answer) == "AccessDenied", (method, target, answer)
            assert data not in answer
    assert not _exists(runtime, bucket, "runs/planted.txt")


# --- presigned GET ------------------------------------------------------------------------------

def test_a_presigned_get_the_functions_signed_returns_the_bytes(runtime: LocalRuntime,
                                                                stored: tuple[str, str, bytes]) -> None:
    bucket, key, data = stored
    status, body = _send(_links(runtime).generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key},
                                                                ExpiresIn=60))
    assert (status, body) == (200, data)


def _with_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    for name, value in changes.items():
        query.pop(name.replace("_", "-"), None)
        if value is not None:
            query[name.replace("_", "-")] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_a_tampered_or_foreign_presigned_get_is_refused(runtime: LocalRuntime, stored: tuple[str, str, bytes]) -> None:
    assert runtime.s3_endpoint is not None
    bucket, key, data = stored
    params = {"Bucket": bucket, "Key": key}
    good = _links(runtime).generate_presigned_url("get_object", Params=params, ExpiresIn=60)
    other_key = _links(runtime).generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "runs/other"},
                                                       ExpiresIn=60)
    refused = {
        "another key, same signature": (_with_query(other_key, X_Amz_Signature=dict(parse_qsl(urlsplit(good).query))[
            "X-Amz-Signature"]), "SignatureDoesNotMatch"),
        "a longer expiry": (_with_query(good, X_Amz_Expires="604800"), "SignatureDoesNotMatch"),
        "another host": (good.replace("127.0.0.1", "localhost"), "SignatureDoesNotMatch"),
        "no session token": (_with_query(good, X_Amz_Security_Token=None), "InvalidToken"),
        "no signature": (_with_query(good, X_Amz_Signature=None), "AuthorizationQueryParametersError"),
        "a key no one issued": (_links(runtime, GARBAGE).generate_presigned_url("get_object", Params=params),
                                "InvalidAccessKeyId"),
        "the functions' key id, another secret": (
            _links(runtime, WRONG_SECRET).generate_presigned_url("get_object", Params=params), "SignatureDoesNotMatch"),
        "another service's scope": (_with_query(good, X_Amz_Credential=dict(parse_qsl(urlsplit(good).query))[
            "X-Amz-Credential"].replace("/s3/", "/dynamodb/")), "AuthorizationQueryParametersError"),
    }
    for name, (url, code) in refused.items():
        status, body = _send(url)
        assert status in (400, 403) and _error_code(body) == code, (name, body)
        assert data not in body, name
    status, _ = _send(good, "HEAD")  # signed for GET
    assert status == 403


# --- POST policies ------------------------------------------------------------------------------

def _grant(runtime: LocalRuntime, data: bytes) -> dict[str, Any]:
    """An upload grant as the API function signs it for a repository tarball of exactly `data`."""
    response = runtime.call_api("POST", "/uploads", body={"sha256": hashlib.sha256(data).hexdigest(),
                                                          "size": len(data)}, caller=REQUESTER)
    assert response.status == 201, response.body
    return response.json()


def _post(grant: dict[str, Any], fields: dict[str, str], data: bytes) -> tuple[int, bytes]:
    boundary = secrets.token_hex(16)
    return _send(grant["url"], "POST", multipart_body(fields, data, boundary),
                 {"Content-Type": f"multipart/form-data; boundary={boundary}"})


def _policy(fields: dict[str, str]) -> dict[str, Any]:
    return json.loads(base64.b64decode(fields["policy"]))


def _with_policy(fields: dict[str, str], policy: dict[str, Any]) -> dict[str, str]:
    return {**fields, "policy": base64.b64encode(json.dumps(policy).encode()).decode()}


@pytest.mark.parametrize("size", [300, 3 << 20], ids=["small", "larger than what is kept in memory"])
def test_a_post_under_the_functions_grant_is_stored(runtime: LocalRuntime, size: int) -> None:
    data = secrets.token_bytes(size)
    grant = _grant(runtime, data)
    assert _post(grant, grant["fields"], data)[0] == 204
    bucket, key = runtime.output("ArtifactBucketName"), grant["fields"]["key"]
    assert runtime.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read() == data


def test_a_post_outside_its_policy_or_without_one_is_refused(runtime: LocalRuntime) -> None:
    data = secrets.token_bytes(300)
    grant = _grant(runtime, data)
    fields = grant["fields"]
    policy = _policy(fields)
    wider = {**policy, "conditions": [c for c in policy["conditions"] if not isinstance(c, list)]
             + [["content-length-range", 1, 1 << 30], ["starts-with", "$key", ""]]}
    unsigned = {name: value for name, value in fields.items() if name not in ("policy", "x-amz-signature")}
    refused = {
        "an edited policy": (_with_policy({**fields, "key": "runs/planted/plan.json"}, wider), data,
                             "SignatureDoesNotMatch", "does not match"),
        "no policy": (unsigned, data, "AccessDenied", "Access Denied"),
        "a key outside the policy's": ({**fields, "key": "runs/planted/plan.json"}, data, "AccessDenied",
                                       "Policy Condition failed"),
        "more than the range": (fields, data + b"!", "EntityTooLarge", "exceeds the maximum allowed size"),
        "less than the range": (fields, data[:-1], "EntityTooSmall", "smaller than the minimum"),
        "a field the policy does not cover": ({**fields, "acl": "public-read"}, data, "AccessDenied",
                                              "Extra input fields: acl"),
        "another signer's policy": ({**fields, "x-amz-signature": "0" * 64}, data, "SignatureDoesNotMatch",
                                    "does not match"),
        "more than S3 takes before the file": ({"x-ignore-padding": "x" * (20 << 10), **fields}, data,
                                               "MaxPostPreDataLengthExceeded", "preceding the upload file"),
    }
    for name, (form, body, code, says) in refused.items():
        status, answer = _post(grant, form, body)
        assert status in (400, 403) and _error_code(answer) == code and says in answer.decode(), (name, answer)
    bucket = runtime.output("ArtifactBucketName")
    assert not _exists(runtime, bucket, fields["key"]) and not _exists(runtime, bucket, "runs/planted/")


def test_an_expired_link_or_policy_is_refused(runtime: LocalRuntime, stored: tuple[str, str, bytes]) -> None:
    bucket, key, _ = stored
    link = _links(runtime).generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=1)
    grant = _links(runtime).generate_presigned_post(bucket, "runs/late/output.tar.gz", ExpiresIn=1)
    time.sleep(2.1)
    status, body = _send(link)
    assert (status, _error_code(body)) == (403, "AccessDenied") and b"Request has expired" in body
    status, body = _post(grant, grant["fields"], b"late")
    assert (status, _error_code(body)) == (403, "AccessDenied") and b"Policy expired" in body


# --- the credentials serve writes ---------------------------------------------------------------

def test_the_profiles_are_readable_by_their_owner_only_even_over_older_files(runtime: LocalRuntime,
                                                                            tmp_path: Path) -> None:
    directory = tmp_path / "local"
    directory.mkdir(mode=0o755)
    (directory / "credentials").write_text("left by an older serve")
    (directory / "credentials").chmod(0o644)
    credentials, config = write_profiles(directory, runtime.principals)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert {stat.S_IMODE(path.stat().st_mode) for path in (credentials, config)} == {0o600}
    assert "aws_secret_access_key" in credentials.read_text()
    (directory / "config").unlink()
    (directory / "config").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        write_profiles(directory, runtime.principals)
    assert not (tmp_path / "elsewhere").exists()


# --- what a POST costs before it is trusted -----------------------------------------------------

LARGE_FILE_BYTES = 100 << 20
SENT_CHUNK = b"\0" * (1 << 20)


@dataclass(frozen=True)
class _Form:
    """A browser-form POST of a file of `file_bytes` bytes, sent a part at a time."""

    url: str
    fields: dict[str, str]
    file_bytes: int
    boundary: str = field(default_factory=lambda: secrets.token_hex(16))

    @property
    def head(self) -> bytes:
        """The fields and the file part's headers: all that comes before the file."""
        return multipart_body(self.fields, b"", self.boundary).removesuffix(self.tail)

    @property
    def tail(self) -> bytes:
        return f"\r\n--{self.boundary}--\r\n".encode()

    @property
    def length(self) -> int:
        return len(self.head) + self.file_bytes + len(self.tail)

    def parts(self) -> Iterator[bytes]:
        """The whole body, from one chunk sent again and again: the sender holds none of the file."""
        yield self.head
        for offset in range(0, self.file_bytes, len(SENT_CHUNK)):
            yield SENT_CHUNK[:self.file_bytes - offset]
        yield self.tail


def _start_post(form: _Form, parts: Iterable[bytes]) -> http.client.HTTPResponse:
    """Send `parts` of the form's body (all of it, or less) under its whole Content-Length; the
    answer, unread: its connection stays open until it is closed (the endpoint answers
    Connection: close, so the response holds the connection)."""
    target = urlsplit(form.url)
    connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
    connection.request("POST", target.path, body=parts, headers={
        "Content-Type": f"multipart/form-data; boundary={form.boundary}", "Content-Length": str(form.length)})
    return connection.getresponse()


def _send_post(form: _Form, parts: Iterable[bytes]) -> tuple[int, str]:
    """The status and error code of the answer to `parts` of the form's body."""
    with _start_post(form, parts) as answer:
        return answer.status, _error_code(answer.read())


def _refusals(runtime: LocalRuntime) -> dict[str, tuple[_Form, tuple[int, str]]]:
    """POSTs of a 100 MiB file that their fields alone condemn, and S3's answer to each."""
    grant = _grant(runtime, secrets.token_bytes(300))
    url, fields = grant["url"], grant["fields"]
    garbage_credential = fields["x-amz-credential"].replace(FUNCTION_CREDENTIALS.access_key, GARBAGE.access_key)
    expired = _links(runtime).generate_presigned_post(runtime.output("ArtifactBucketName"), "runs/late/output.tar.gz",
                                                      ExpiresIn=-60)
    return {
        "unsigned": (_Form(url, {"key": fields["key"]}, LARGE_FILE_BYTES), (403, "AccessDenied")),
        "another signer's policy": (_Form(url, {**fields, "x-amz-signature": "0" * 64}, LARGE_FILE_BYTES),
                                    (403, "SignatureDoesNotMatch")),
        "a key no one issued": (_Form(url, {**fields, "x-amz-credential": garbage_credential}, LARGE_FILE_BYTES),
                                (403, "InvalidAccessKeyId")),
        "an expired policy": (_Form(expired["url"], expired["fields"], LARGE_FILE_BYTES), (403, "AccessDenied")),
    }


def test_a_post_its_fields_condemn_is_refused_before_its_file_is_sent(runtime: LocalRuntime) -> None:
    for name, (form, refusal) in _refusals(runtime).items():
        assert _send_post(form, [form.head]) == refusal, name


def test_a_post_longer_than_any_upload_is_refused_before_its_body_is_sent(runtime: LocalRuntime) -> None:
    grant = _grant(runtime, secrets.token_bytes(300))
    form = _Form(grant["url"], grant["fields"], MAX_UPLOAD_BYTES + (2 << 20))
    assert _send_post(form, []) == (400, "EntityTooLarge")


def test_a_file_past_its_range_is_refused_as_it_arrives(runtime: LocalRuntime) -> None:
    data = secrets.token_bytes(300)
    grant = _grant(runtime, data)
    form = _Form(grant["url"], grant["fields"], LARGE_FILE_BYTES)
    # More than a byte past: the endpoint takes a part's last bytes only once it sees they do not
    # begin the boundary that would end it.
    assert _send_post(form, [form.head, data + b"!" * 1024]) == (400, "EntityTooLarge")
    assert not _exists(runtime, runtime.output("ArtifactBucketName"), grant["fields"]["key"])


# What the endpoint may hold while refusing four 100 MiB POSTs at once: a chunk of each, a thread each.
FLOOD_GROWTH_BOUND_MIB = 16


def test_a_flood_of_large_refused_posts_leaves_memory_flat(runtime: LocalRuntime) -> None:
    """The endpoint runs in this process, as it runs in `serve`'s: the POSTs are sent whole, at
    once, and each gets its refusal, while the resident set stays within a bound."""
    refusals = list(_refusals(runtime).values())
    answers: list[tuple[int, str] | None] = [None] * len(refusals)

    def send(index: int, form: _Form) -> None:
        answers[index] = _send_post(form, form.parts())

    before = reset_peak()
    senders = [threading.Thread(target=send, args=(index, form)) for index, (form, _) in enumerate(refusals)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    peak = memory_mib("VmHWM")
    assert answers == [refusal for _, refusal in refusals]
    assert before is not None and peak is not None, "this measure reads Linux's /proc"
    assert peak - before < FLOOD_GROWTH_BOUND_MIB, f"the resident set grew by {peak - before:.1f} MiB"


def test_a_connection_past_the_cap_waits_for_one_to_end(runtime: LocalRuntime, stored: tuple[str, str, bytes],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """With MAX_CONNECTIONS in flight, one more is not served: it is closed unanswered once its
    wait is over, and served as soon as one of the others ends."""
    assert runtime.s3_endpoint is not None
    bucket, key, data = stored
    link = _links(runtime).generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=60)
    unsigned = _Form(f"{runtime.s3_endpoint.url}/{bucket}", {"key": "runs/held/output.tar.gz"}, LARGE_FILE_BYTES)
    held: list[http.client.HTTPResponse] = []
    try:
        for _ in range(s3_endpoint.MAX_CONNECTIONS):
            # Answered, so surely served, then held: the endpoint reads on for the rest of the body.
            held.append(_start_post(unsigned, [unsigned.head]))
            assert held[-1].status == 403
        monkeypatch.setattr(s3_endpoint, "CONNECTION_WAIT_S", 0.5)
        with pytest.raises(ConnectionResetError):  # closed unanswered once the wait is over
            _send(link)
        monkeypatch.undo()
        held.pop().close()
        assert _send(link) == (200, data)
    finally:
        for answer in held:
            answer.close()


def test_a_builds_progress_is_posted_again_and_again_under_its_grant_and_a_post_that_fails_never_stops_it(
        runtime: LocalRuntime, capsys: pytest.CaptureFixture[str]) -> None:
    bucket = runtime.output("ArtifactBucketName")
    store = ArtifactStore(bucket, runtime.client("s3"), _links(runtime))
    key = f"runs/probe-{secrets.token_hex(4)}/execute/builds/abc-1/{PROGRESS_FILE}"
    poster = ProgressPoster(store.upload_grant(key, PROGRESS_LIMIT_BYTES, 600))
    for step in ("write", "build"):  # each step overwrites the one before
        poster({"step": step, "written": 3})
        assert json.loads(runtime.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())["step"] == step
    poster({"step": "coverage", "padding": "x" * PROGRESS_LIMIT_BYTES})  # past the grant's limit: not sent
    assert json.loads(runtime.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())["step"] == "build"
    assert capsys.readouterr().out == ""

    closed = ProgressPoster({"url": "http://127.0.0.1:9/", "fields": {"key": key}})  # nothing listens there
    closed({"step": "write"})
    closed({"step": "build"})
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 1 and "the build's progress could not be posted" in said[0] and "the build goes on" in said[0]
