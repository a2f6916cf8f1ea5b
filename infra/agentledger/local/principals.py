"""Callers of the local API, as API Gateway's IAM authorization knows them: IAM users in moto,
with access keys written to a credentials file as named profiles, and a SigV4 check of every
request against moto's IAM. No header says who the caller is; the signature proves it.

moto does not evaluate IAM policies, so the stack's managed policies are attached to the local
users (as a person would attach them on AWS) but not enforced here. What the service enforces
itself, separation of duties, holds locally exactly as on AWS."""
from __future__ import annotations

import configparser
import hashlib
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from moto.core import DEFAULT_ACCOUNT_ID
from moto.iam.models import iam_backends

from .profiles import LOCAL_REGION as REGION
from .profiles import PROFILE_PREFIX
from .sigv4 import AMZ_DATE_FORMAT, CREDENTIAL, expected_signature, parse_amz_date, same_signature

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

SERVICE = "execute-api"
# API Gateway refuses a signature dated more than five minutes from its clock.
CLOCK_SKEW = timedelta(minutes=5)
DUTIES = ("requester", "reviewer", "operator")
# SignedHeaders names every header signed, and a header's name may hold any of HTTP's token characters.
_AUTHORIZATION = re.compile(
    f"^AWS4-HMAC-SHA256 Credential={CREDENTIAL}, ?SignedHeaders=(?P<headers>[a-z0-9!#$%&'*+.^_`|~;-]+),"
    r" ?Signature=(?P<signature>[0-9a-f]{64})$")


class SignatureRefused(Exception):
    """A request API Gateway's IAM authorization would answer with 403; the message is its."""


@dataclass(frozen=True)
class LocalPrincipal:
    duty: str
    arn: str
    access_key_id: str
    secret_access_key: str

    @property
    def profile(self) -> str:
        return f"{PROFILE_PREFIX}{self.duty}"


def user_name(duty: str) -> str:
    return f"{PROFILE_PREFIX}{duty}"


def principal_arn(duty: str) -> str:
    return f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:user/{user_name(duty)}"


def create_principals(iam: Any, policy_arns: Mapping[str, str]) -> list[LocalPrincipal]:
    """One IAM user per duty, with that duty's managed policy attached and a fresh access key."""
    principals = []
    for duty in DUTIES:
        name = user_name(duty)
        iam.create_user(UserName=name, Tags=[{"Key": "agentledger:duty", "Value": duty}])
        if duty in policy_arns:
            iam.attach_user_policy(UserName=name, PolicyArn=policy_arns[duty])
        key = iam.create_access_key(UserName=name)["AccessKey"]
        principals.append(LocalPrincipal(duty, principal_arn(duty), key["AccessKeyId"], key["SecretAccessKey"]))
    return principals


def write_profiles(directory: Path, principals: list[LocalPrincipal]) -> tuple[Path, Path]:
    """A credentials file and a config file holding one named profile per principal, readable by
    this user only. The requester is also `default`, so a plain `agentledger run` is signed.

    The modes are set, not only asked for at creation: a directory or file left by an earlier
    `serve` (or made by hand) keeps its mode through mkdir and O_CREAT, and a credentials file
    another user could read would let them sign as the reviewer. A link in its place is refused
    (O_NOFOLLOW), so the secrets cannot be written wherever it points."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.chmod(0o700)
    credentials, config = configparser.ConfigParser(), configparser.ConfigParser()
    for principal in principals:
        for section in [principal.profile] + (["default"] if principal.duty == "requester" else []):
            credentials[section] = {"aws_access_key_id": principal.access_key_id,
                                    "aws_secret_access_key": principal.secret_access_key}
            config["default" if section == "default" else f"profile {section}"] = {"region": REGION}
    paths = directory / "credentials", directory / "config"
    for path, parser in zip(paths, (credentials, config), strict=False):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w") as file:
            parser.write(file)
    return paths


@dataclass(frozen=True)
class VerifiedCaller:
    arn: str  # the IAM user whose key signed the request
    signed_headers: frozenset[str]  # lower-cased: what the signature covers besides method, path, query and body


def verify_signature(method: str, url: str, headers: Mapping[str, str], body: bytes,
                     now: datetime | None = None) -> VerifiedCaller:
    """Who signed this request and which headers the signature covers, or SignatureRefused. The
    body is bound as API Gateway binds it: hashed here, never taken from x-amz-content-sha256."""
    lowered = {name.lower(): value for name, value in headers.items()}
    authorization = lowered.get("authorization")
    if not authorization:
        raise SignatureRefused("Missing Authentication Token")
    parsed = _AUTHORIZATION.match(authorization)
    if parsed is None:
        raise SignatureRefused("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' "
                               "(AWS4-HMAC-SHA256)")
    if (parsed["region"], parsed["service"]) != (REGION, SERVICE):
        raise SignatureRefused(f"Credential should be scoped to {REGION}/{SERVICE}, not "
                               f"{parsed['region']}/{parsed['service']}")
    amz_date = lowered.get("x-amz-date", "")
    signed_at = parse_amz_date(amz_date)
    if signed_at is None:
        raise SignatureRefused("Authorization requires a valid X-Amz-Date header (YYYYMMDD'T'HHMMSS'Z')")
    moment = now or datetime.now(UTC)
    if abs(moment - signed_at) > CLOCK_SKEW or not amz_date.startswith(parsed["date"]):
        raise SignatureRefused(f"Signature expired: {amz_date} is now earlier than "
                               f"{(moment - CLOCK_SKEW).strftime(AMZ_DATE_FORMAT)}")
    signed = parsed["headers"].split(";")
    if "host" not in signed or any(name not in lowered for name in signed):
        raise SignatureRefused("SignedHeaders must include host and name only headers the request carries")
    claimed = lowered.get("x-amz-content-sha256")
    if claimed is not None and claimed != hashlib.sha256(body).hexdigest():
        raise SignatureRefused("x-amz-content-sha256 must be the SHA-256 of the body (UNSIGNED-PAYLOAD is not "
                               "accepted): the signature covers the body sent")
    user, secret = _active_key(parsed["key"])
    request = AWSRequest(method=method, url=url, data=body, headers={name: lowered[name] for name in signed})
    expected = expected_signature(request, Credentials(parsed["key"], secret), SERVICE, REGION, amz_date)
    if not same_signature(expected, parsed["signature"]):
        raise SignatureRefused("The request signature we calculated does not match the signature you provided. "
                               "Check your AWS Secret Access Key and signing method.")
    return VerifiedCaller(user, frozenset(signed))


def _active_key(access_key_id: str) -> tuple[str, str]:
    backend = iam_backends[DEFAULT_ACCOUNT_ID]["global"]
    for user in backend.users.values():
        for key in user.access_keys:
            if key.access_key_id == access_key_id and key.status == "Active":
                return user.arn, key.secret_access_key
    raise SignatureRefused("The security token included in the request is invalid.")
