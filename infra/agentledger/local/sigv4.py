"""Signature Version 4, checked as AWS checks it, for the local endpoints that take signed requests:
the API (a signature in the Authorization header, as API Gateway's IAM authorization checks it) and
the S3 endpoint (a signature in the query string or over a POST policy, as S3 checks it).

Nothing here signs: botocore's signer computes the signature a request should carry from the
secret of the key it names, and the endpoint compares that with the one the request carries."""
from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

if TYPE_CHECKING:
    from botocore.credentials import Credentials

ALGORITHM = "AWS4-HMAC-SHA256"
AMZ_DATE_FORMAT = "%Y%m%dT%H%M%SZ"
# "<key>/<yyyymmdd>/<region>/<service>/aws4_request", as the Credential of a signature names it.
CREDENTIAL = (r"(?P<key>[A-Z0-9]{16,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/(?P<service>[a-z0-9-]+)"
              r"/aws4_request")
_CREDENTIAL = re.compile(f"^{CREDENTIAL}$")


@dataclass(frozen=True)
class Scope:
    access_key_id: str
    date: str
    region: str
    service: str


def parse_scope(credential: str) -> Scope | None:
    parsed = _CREDENTIAL.match(credential)
    return Scope(parsed["key"], parsed["date"], parsed["region"], parsed["service"]) if parsed else None


def parse_amz_date(value: str) -> datetime | None:
    try:
        return datetime.strptime(value, AMZ_DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def expected_signature(request: AWSRequest, credentials: Credentials, service: str, region: str, amz_date: str,
                       signer: type[SigV4Auth] = SigV4Auth) -> str:
    """The signature `request` should carry if `credentials` signed it at `amz_date`. `signer`
    decides the canonical form (S3's query signer keeps the path as sent and hashes no payload)."""
    auth = signer(credentials, service, region)
    request.context["timestamp"] = amz_date
    return auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)


def expected_signature_of(text: str, credentials: Credentials, service: str, region: str, amz_date: str) -> str:
    """The signature of a string to sign as it is (an S3 POST policy is signed as its base64 text)."""
    request = AWSRequest()
    request.context["timestamp"] = amz_date
    return SigV4Auth(credentials, service, region).signature(text, request)


def same_signature(expected: str, given: str) -> bool:
    """Compared in constant time, so the time a refusal takes does not tell how much was right."""
    return hmac.compare_digest(expected.encode(), given.encode())
