"""The local stack's S3 endpoint on loopback: what artifact links and the test builds' presigned
input and output reach, in front of moto's in-process S3.

It answers S3 requests that the runtime's own functions signed, and nothing else. moto's server
would answer every service with any signature, so any process on this machine (the code under
test included) could read the ledger, the token secret and the review tokens, or write any key.
Here:
- a GET is served only if it is presigned as S3 checks it: the query's SigV4 signature recomputed
  with the secret of the one key the functions sign with, over the signed host, unexpired;
- a browser-form POST is stored only if its policy is signed with that key, unexpired, and every
  condition holds (bucket, key, content-length-range), with no field the policy does not cover;
- everything else (an unsigned or header-signed request, any other service's call) is refused
  with S3's XML error, as S3 refuses a request to a private bucket.

Whatever reaches the port may send bodies as large as it likes, as often as it likes, so what a
request costs is bounded before it is trusted: a POST is read as it arrives, its policy and
signature are checked from the fields before the file (S3 sends them first), a refusal is
answered before the file is read, and the file is taken up to its policy's size and no further;
and only MAX_CONNECTIONS connections are served at once, however many arrive.
"""
from __future__ import annotations

import base64
import binascii
import io
import json
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge
from werkzeug.sansio.multipart import Data, Epilogue, Event, Field, File, MultipartDecoder, NeedData
from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler
from werkzeug.wrappers import Request, Response

from agentledger.limits import MAX_UPLOAD_BYTES

from .profiles import LOCAL_REGION
from .sigv4 import ALGORITHM, expected_signature, expected_signature_of, parse_amz_date, parse_scope, same_signature

if TYPE_CHECKING:
    from collections.abc import Iterator

    from botocore.credentials import Credentials

SERVICE = "s3"
MAX_EXPIRES_S = 7 * 24 * 3600  # S3's limit for a presigned URL
# S3 takes a request dated up to 15 minutes ahead of its clock.
CLOCK_SKEW = timedelta(minutes=15)
# The largest upload the runtime grants (a repository tarball) and room for the form's fields: a
# longer body is refused before it is read.
MAX_POST_BYTES = MAX_UPLOAD_BYTES + (1 << 20)
# S3's bound on what precedes the file in a POST (MaxPostPreDataLengthBytes): all that is read of a
# POST before its policy and signature are checked.
MAX_PRE_DATA_BYTES = 20 << 10
STREAM_CHUNK_BYTES = 1 << 16
# A file up to this size is kept in memory as it arrives, a larger one in a temporary file: moto
# copies an object whole when it is put (a 100 MiB put_object peaks ~400 MiB in moto, given bytes or
# a file alike), so a copy of the endpoint's own would add to that peak, and hold it for as long as
# the upload takes to arrive.
FILE_IN_MEMORY_BYTES = 1 << 20
# Connections served at once. Each holds a thread and a few chunks of its body (a signed upload, up
# to FILE_IN_MEMORY_BYTES more), so however many arrive, no more than this many of those are held.
# Past it the accept loop waits up to CONNECTION_WAIT_S for one to end (the kernel's listen queue
# holds the new ones meanwhile, at no cost here) rather than refusing at once: a flood's connections
# end as soon as they are refused and their body is dropped, and a build's upload or an artifact
# download caught behind them should be served late rather than fail. The wait is bounded because
# stop() waits for the accept loop, and connections may not end; one that waited that long is
# closed unanswered, a reset the build driver and SDKs retry.
MAX_CONNECTIONS = 16
CONNECTION_WAIT_S = 10.0
# A connection that sends or takes nothing for this long is dropped, so an idle one does not hold
# one of the MAX_CONNECTIONS for good.
CONNECTION_IDLE_S = 30.0
# Form fields that a POST policy need not name (S3's rule): the signature is over the policy, the
# policy cannot name itself, and `x-ignore-` fields are for the browser's use.
UNCOVERED_FIELDS = frozenset({"policy", "x-amz-signature", "file"})
AUTH_FIELDS = frozenset({"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-security-token"})
# What a stored object takes from the form. A field the runtime's grants never carry (acl, metadata,
# redirects) is refused rather than stored without its meaning.
STORED_FIELDS = frozenset({"key", "content-type"})
QUERY_AUTH = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders",
              "X-Amz-Signature")


# S3's status for each error code this endpoint answers with.
STATUS = {
    "AccessDenied": HTTPStatus.FORBIDDEN, "SignatureDoesNotMatch": HTTPStatus.FORBIDDEN,
    "InvalidAccessKeyId": HTTPStatus.FORBIDDEN, "InvalidToken": HTTPStatus.BAD_REQUEST,
    "AuthorizationQueryParametersError": HTTPStatus.BAD_REQUEST, "InvalidArgument": HTTPStatus.BAD_REQUEST,
    "InvalidPolicyDocument": HTTPStatus.BAD_REQUEST, "MalformedPOSTRequest": HTTPStatus.BAD_REQUEST,
    "EntityTooLarge": HTTPStatus.BAD_REQUEST, "EntityTooSmall": HTTPStatus.BAD_REQUEST,
    "MaxPostPreDataLengthExceeded": HTTPStatus.BAD_REQUEST, "IncompleteBody": HTTPStatus.BAD_REQUEST,
    "MissingContentLength": HTTPStatus.LENGTH_REQUIRED, "PreconditionFailed": HTTPStatus.PRECONDITION_FAILED,
    "NoSuchKey": HTTPStatus.NOT_FOUND, "NoSuchBucket": HTTPStatus.NOT_FOUND,
    "NotImplemented": HTTPStatus.NOT_IMPLEMENTED,
}
TOO_LARGE = "Your proposed upload exceeds the maximum allowed size"
PRE_DATA_TOO_LARGE = "Your POST request fields preceding the upload file were too large."
QUERY_ERROR = "AuthorizationQueryParametersError"
MISMATCH = ("The request signature we calculated does not match the signature you provided. "
            "Check your key and signing method.")
NO_SUCH_BUCKET = "The specified bucket does not exist."


class S3Error(Exception):
    """A refusal in S3's words: its error code and message, sent with the status S3 gives the code."""

    def __init__(self, code: str, message: str = "Access Denied") -> None:
        super().__init__(message)
        self.code, self.message = code, message

    def response(self) -> Response:
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{self.code}</Code>'
                f"<Message>{escape(self.message)}</Message></Error>")
        return Response(body, status=STATUS[self.code], content_type="application/xml")


class _DeclaredBody(io.BufferedIOBase):
    """A request's body as its connection gives it: what has arrived, at most a chunk a read
    (werkzeug discards what a request left unread with reads of 10 MB), no further than its
    Content-Length, and nothing of a body longer than any this endpoint takes."""

    def __init__(self, connection_input: io.BufferedIOBase, content_length: str | None) -> None:
        super().__init__()
        self._input = connection_input
        try:
            declared = int(content_length or 0)
        except ValueError:
            declared = 0
        self._left = declared if 0 <= declared <= MAX_POST_BYTES else 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        with memoryview(buffer) as view:
            try:
                read = self._input.readinto1(view[:min(len(view), self._left, STREAM_CHUNK_BYTES)])
            except OSError:  # reset, or idle past CONNECTION_IDLE_S: the body ends here
                read, self._left = 0, 0
        self._left -= read
        return read

    def read(self, size: int | None = -1) -> bytes:
        buffer = bytearray(min(self._left if size is None or size < 0 else size, self._left, STREAM_CHUNK_BYTES))
        del buffer[self.readinto(buffer):]
        return bytes(buffer)

    def discard_rest(self) -> None:
        while self.read(STREAM_CHUNK_BYTES):
            pass


class _RequestHandler(WSGIRequestHandler):
    timeout = CONNECTION_IDLE_S
    # A read no larger than the connection's buffer gives what has arrived, where a larger one waits
    # for all of it: a chunk a read, the fields before a file are decoded as soon as they are in.
    rbufsize = STREAM_CHUNK_BYTES

    def run_wsgi(self) -> None:
        connection_input = self.rfile
        self.rfile = body = _DeclaredBody(connection_input, self.headers.get("Content-Length"))
        try:
            super().run_wsgi()
            # What a refused request did not send yet is read and dropped before the connection
            # closes: a client that sends its whole body before it reads the answer (urllib, so the
            # build driver and the CLI) would otherwise meet a reset, not the refusal, and retry it.
            # werkzeug does so too, but stops at the first 10 ms the client sends nothing.
            body.discard_rest()
        finally:
            self.rfile = connection_input


class _BoundedServer(ThreadedWSGIServer):
    """werkzeug's threaded server on loopback, serving at most MAX_CONNECTIONS connections at once."""

    def __init__(self, port: int, application: Any) -> None:
        self._free_slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__("127.0.0.1", port, application, handler=_RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._free_slots.acquire(timeout=CONNECTION_WAIT_S):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started to give the slot back
            self._free_slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._free_slots.release()


class LocalS3Endpoint:
    def __init__(self, s3: Any, credentials: Credentials, region: str = LOCAL_REGION, port: int = 0) -> None:
        """`s3`: a client of the in-process mock; `credentials`: the one key whose signatures are
        taken (the functions' own, which sign every link and grant)."""
        self._s3 = s3
        self.credentials = credentials
        self.region = region
        self._server = _BoundedServer(port, self._application)
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-s3", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self._server.host}:{self._server.port}"

    def start(self) -> LocalS3Endpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- one request -------------------------------------------------------------------------
    def _application(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            response = self._answer(request)
        except S3Error as refused:
            response = refused.response()
        return response(environ, start_response)

    def _answer(self, request: Request) -> Response:
        # The path as sent (werkzeug's is decoded): a signature covers the encoded form.
        raw_path = urlsplit(request.environ.get("RAW_URI") or request.path).path
        bucket, _, key = unquote(raw_path).removeprefix("/").partition("/")
        query = parse_qsl(request.environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if request.method == "GET" and key and any(name.startswith("X-Amz-") for name, _ in query):
            self._check_presigned(request, raw_path, query)
            return self._get_object(bucket, key)
        if request.method == "POST" and bucket and not key and not query:
            return self._post_object(request, bucket)
        # Unsigned, signed in a header (no one but the functions holds the key, and they reach moto
        # in-process), or not S3 at all: S3's answer to such a request for a private bucket.
        raise S3Error("AccessDenied")

    # -- presigned GET -------------------------------------------------------------------------
    def _check_presigned(self, request: Request, raw_path: str, query: list[tuple[str, str]]) -> None:
        params = dict(query)
        if any(name not in params for name in QUERY_AUTH) or len(params) != len(query):
            raise S3Error(QUERY_ERROR, "Query-string authentication version 4 requires the X-Amz-Algorithm, "
                          "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires "
                          "parameters, once each.")
        if params["X-Amz-Algorithm"] != ALGORITHM:
            raise S3Error(QUERY_ERROR, f"X-Amz-Algorithm only supports \"{ALGORITHM}\"")
        amz_date = params["X-Amz-Date"]
        self._check_credential(params["X-Amz-Credential"], amz_date, params.get("X-Amz-Security-Token"),
                               QUERY_ERROR)
        expires = params["X-Amz-Expires"]
        if not expires.isdigit() or not 0 < int(expires) <= MAX_EXPIRES_S:
            raise S3Error(QUERY_ERROR, f"X-Amz-Expires must be a whole number of seconds from 1 to {MAX_EXPIRES_S}")
        signed_at = parse_amz_date(amz_date)
        assert signed_at is not None  # _check_credential parsed it
        now = datetime.now(UTC)
        if now > signed_at + timedelta(seconds=int(expires)):
            raise S3Error("AccessDenied", "Request has expired")
        if signed_at > now + CLOCK_SKEW:
            raise S3Error("AccessDenied", "Request is not valid yet")
        signed = params["X-Amz-SignedHeaders"].split(";")
        if "host" not in signed or any(name not in request.headers for name in signed):
            raise S3Error("AccessDenied", "There were headers present in the request which were not signed, or "
                          "SignedHeaders names a header the request does not carry (host must be signed)")
        # As botocore built the URL: the path encoded once (S3 does not normalize it), the query's
        # parameters but the signature, each encoded and sorted; the signed headers as received,
        # the Host among them, so a link works only on the host it was signed for.
        canonical = AWSRequest(method=request.method,
                               url=f"http://{request.headers['Host']}{quote(unquote(raw_path), safe='/~')}",
                               headers={name: request.headers[name] for name in signed})
        canonical.params = {name: value for name, value in params.items() if name != "X-Amz-Signature"}
        expected = expected_signature(canonical, self.credentials, SERVICE, self.region, amz_date,
                                      signer=S3SigV4QueryAuth)
        if not same_signature(expected, params["X-Amz-Signature"]):
            raise S3Error("SignatureDoesNotMatch", MISMATCH)
        unknown = sorted(name for name in params if not name.startswith("X-Amz-"))
        if unknown:
            raise S3Error("NotImplemented",
                          f"this local endpoint serves a plain GetObject; it does not take {unknown}")

    def _check_credential(self, credential: str, amz_date: str, token: str | None,
                          malformed: str) -> None:
        """The key, scope, date and session token of a signature: the functions' key only.
        `malformed`: the code S3 gives a credential it cannot parse, which differs by request kind."""
        scope = parse_scope(credential)
        if scope is None:
            raise S3Error(malformed, "Error parsing the X-Amz-Credential parameter; it must be "
                          "<key>/<date>/<region>/s3/aws4_request")
        if (scope.region, scope.service) != (self.region, SERVICE):
            raise S3Error(malformed, f"Error parsing the X-Amz-Credential parameter; the scope {scope.region}/"
                          f"{scope.service} is wrong; expecting {self.region}/{SERVICE}")
        if parse_amz_date(amz_date) is None:
            raise S3Error(malformed, "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
        if not amz_date.startswith(scope.date):
            raise S3Error(malformed, "Invalid credential date. Date is not the same as X-Amz-Date.")
        if not same_signature(self.credentials.access_key, scope.access_key_id):
            raise S3Error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        if self.credentials.token is not None and not same_signature(self.credentials.token, token or ""):
            raise S3Error("InvalidToken", "The provided token is malformed or otherwise invalid.")

    def _get_object(self, bucket: str, key: str) -> Response:
        try:
            found = self._s3.get_object(Bucket=bucket, Key=key)
        except self._s3.exceptions.NoSuchKey:
            raise S3Error("NoSuchKey", "The specified key does not exist.") from None
        except self._s3.exceptions.NoSuchBucket:
            raise S3Error("NoSuchBucket", NO_SUCH_BUCKET) from None
        body: Iterator[bytes] = found["Body"].iter_chunks(STREAM_CHUNK_BYTES)
        return Response(body, status=HTTPStatus.OK, direct_passthrough=True, headers={
            "Content-Type": found.get("ContentType") or "binary/octet-stream",
            "Content-Length": str(found["ContentLength"]), "ETag": found["ETag"],
            "Last-Modified": found["LastModified"].strftime("%a, %d %b %Y %H:%M:%S GMT")})

    # -- POST policy ---------------------------------------------------------------------------
    def _post_object(self, request: Request, bucket: str) -> Response:
        body = _MultipartBody(request)
        fields = _fields_before_file(body)
        if "key" not in fields:
            raise S3Error("InvalidArgument", "Bucket POST must contain a field named 'key'.")
        if "policy" not in fields:
            raise S3Error("AccessDenied")  # an anonymous upload, which a private bucket refuses
        if fields.get("x-amz-algorithm") != ALGORITHM or "x-amz-signature" not in fields:
            raise S3Error("InvalidArgument",
                          f"Bucket POST must be signed with x-amz-algorithm {ALGORITHM} and carry x-amz-credential, "
                          "x-amz-date and x-amz-signature")
        amz_date = fields.get("x-amz-date", "")
        self._check_credential(fields.get("x-amz-credential", ""), amz_date, fields.get("x-amz-security-token"),
                               "InvalidArgument")
        expected = expected_signature_of(fields["policy"], self.credentials, SERVICE, self.region, amz_date)
        if not same_signature(expected, fields["x-amz-signature"]):
            raise S3Error("SignatureDoesNotMatch", MISMATCH)
        smallest, largest = _check_policy(_decode_policy(fields["policy"]), {**fields, "bucket": bucket})
        unsupported = sorted(name for name in set(fields) - UNCOVERED_FIELDS - AUTH_FIELDS - STORED_FIELDS
                             if not name.startswith("x-ignore-"))
        if unsupported:
            raise S3Error("NotImplemented",
                          f"this local endpoint stores key and Content-Type only; it does not take {unsupported}")
        extra = {"ContentType": fields["content-type"]} if "content-type" in fields else {}
        with tempfile.SpooledTemporaryFile(max_size=FILE_IN_MEMORY_BYTES) as file:
            if _receive_file(body, file, largest) < smallest:
                raise S3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
            file.seek(0)
            try:
                stored = self._s3.put_object(Bucket=bucket, Key=fields["key"], Body=file, **extra)
            except self._s3.exceptions.NoSuchBucket:
                raise S3Error("NoSuchBucket", NO_SUCH_BUCKET) from None
        return Response(status=HTTPStatus.NO_CONTENT, headers={
            "ETag": stored["ETag"], "Location": f"{self.url}/{bucket}/{quote(fields['key'], safe='/~')}"})


class _MultipartBody:
    """A browser-form POST's body, decoded as it is read, a chunk at a time."""

    def __init__(self, request: Request) -> None:
        """Refuses, before reading any of it, a body that is not a form or is longer than any POST taken."""
        boundary = request.mimetype_params.get("boundary") if request.mimetype == "multipart/form-data" else None
        if not boundary:
            raise S3Error("PreconditionFailed", "Bucket POST must be of the enclosure-type multipart/form-data")
        length = request.content_length
        if length is None:
            raise S3Error("MissingContentLength", "You must provide the Content-Length HTTP header.")
        if length > MAX_POST_BYTES:
            raise S3Error("EntityTooLarge", TOO_LARGE)
        self._stream = request.stream
        # The decoder hands a part's data on as it comes, keeping back only what may begin a boundary;
        # what it cannot hand on is a part's headers, which must end within what precedes the file.
        self._decoder = MultipartDecoder(boundary.encode(),
                                         max_form_memory_size=MAX_PRE_DATA_BYTES + STREAM_CHUNK_BYTES)
        self._bytes_read = 0

    @property
    def bytes_decoded(self) -> int:
        return self._bytes_read - len(self._decoder.buffer)

    def next_event(self) -> Event:
        while True:
            try:
                event = self._decoder.next_event()
            except ValueError:
                raise S3Error("MalformedPOSTRequest",
                              "The body of your POST request is not well-formed multipart/form-data.") from None
            if not isinstance(event, NeedData):
                return event
            try:
                chunk = self._stream.read(STREAM_CHUNK_BYTES)
            except ClientDisconnected:
                raise S3Error("IncompleteBody", "You did not provide the number of bytes specified by the "
                              "Content-Length HTTP header.") from None
            self._bytes_read += len(chunk)
            try:
                self._decoder.receive_data(chunk or None)
            except RequestEntityTooLarge:
                raise S3Error("MaxPostPreDataLengthExceeded", PRE_DATA_TOO_LARGE) from None


def _fields_before_file(body: _MultipartBody) -> dict[str, str]:
    """The form's fields, names folded to lower case as S3 matches them, read up to the file's
    first byte: what follows the file S3 ignores, and the file is not read until they are checked."""
    fields: dict[str, str] = {}
    name: str | None = None
    value: list[bytes] = []
    while True:
        event = body.next_event()
        if body.bytes_decoded > MAX_PRE_DATA_BYTES:
            raise S3Error("MaxPostPreDataLengthExceeded", PRE_DATA_TOO_LARGE)
        if isinstance(event, (Field, File)):
            name, value = event.name.lower(), []
            if name in fields or (isinstance(event, File) and name != "file"):
                raise S3Error("InvalidArgument",
                              f"POST takes each field once and one file, in the field named file (not {name!r})")
            if name == "file":
                return fields
        elif isinstance(event, Data) and name is not None:
            value.append(event.data)
            if not event.more_data:
                fields[name] = b"".join(value).decode("utf-8", errors="replace")
        elif isinstance(event, Epilogue):
            raise S3Error("InvalidArgument", "POST requires exactly one file upload per request.")


def _receive_file(body: _MultipartBody, file: IO[bytes], largest: int) -> int:
    """Copy the file's bytes into `file` as they arrive; its size. Refused at the first byte past `largest`."""
    size = 0
    while True:
        event = body.next_event()
        assert isinstance(event, Data)  # a part's data runs to its end before the next part begins
        size += len(event.data)
        if size > largest:
            raise S3Error("EntityTooLarge", TOO_LARGE)
        file.write(event.data)
        if not event.more_data:
            return size


def _decode_policy(encoded: str) -> dict[str, Any]:
    try:
        policy = json.loads(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError):
        raise S3Error("InvalidPolicyDocument", "Invalid Policy: Invalid JSON.") from None
    if not isinstance(policy, dict) or not isinstance(policy.get("expiration"), str):
        raise S3Error("InvalidPolicyDocument", "Invalid Policy: Policy missing expiration.")
    if not isinstance(policy.get("conditions"), list):
        raise S3Error("InvalidPolicyDocument", "Invalid Policy: Policy missing conditions.")
    return policy


def _check_policy(policy: dict[str, Any], fields: dict[str, str]) -> tuple[int, int]:
    """S3's checks of a signed policy: unexpired, each condition met, each field covered. The
    smallest and largest file it allows, which the file is held to as it arrives."""
    try:
        expired = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00")) < datetime.now(UTC)
    except (ValueError, TypeError):  # not a time, or one without its zone
        raise S3Error("InvalidPolicyDocument", "Invalid Policy: Invalid 'expiration' value.") from None
    if expired:
        raise S3Error("AccessDenied", "Invalid according to Policy: Policy expired.")
    covered: set[str] = set()
    smallest, largest = 0, MAX_UPLOAD_BYTES
    for condition in policy["conditions"]:
        if (isinstance(condition, list) and len(condition) == 3 and condition[0] == "content-length-range"
                and all(isinstance(bound, int) for bound in condition[1:])):
            smallest, largest = max(smallest, condition[1]), min(largest, condition[2])
        else:
            covered.update(_check_condition(condition, fields))
    extra = sorted(name for name in fields
                   if name not in covered and name not in UNCOVERED_FIELDS and name != "bucket"
                   and not name.startswith("x-ignore-"))
    if extra:
        raise S3Error("AccessDenied", f"Invalid according to Policy: Extra input fields: {', '.join(extra)}")
    return smallest, largest


def _check_condition(condition: Any, fields: dict[str, str]) -> set[str]:
    """Check one condition on the fields; the fields it covers."""
    if isinstance(condition, dict) and len(condition) == 1:
        [(name, wanted)] = condition.items()
        condition = ["eq", f"${name}", wanted]
    if not (isinstance(condition, list) and len(condition) == 3 and condition[0] in ("eq", "starts-with")
            and all(isinstance(part, str) for part in condition[1:]) and condition[1].startswith("$")):
        raise S3Error("InvalidPolicyDocument", f"Invalid Policy: Invalid Condition: {json.dumps(condition)[:200]}")
    operator, name, wanted = condition[0], condition[1][1:].lower(), condition[2]
    value = fields.get(name)
    met = value is not None and (value == wanted if operator == "eq" else value.startswith(wanted))
    if not met:
        raise S3Error("AccessDenied", f"Invalid according to Policy: Policy Condition failed: {json.dumps(condition)}")
    return {name}
