"""SigV4 for every request the CLI sends, with botocore's credential chain (`--profile`,
AWS_PROFILE, the environment, the shared files, SSO, instance roles): one code path for the
deployed API and the local one. For a local API, the profiles the `serve` on that port wrote are
the shared files unless AWS_SHARED_CREDENTIALS_FILE says otherwise."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from agentledger.local.profiles import LOCAL_REGION, instance_profiles_dir

if TYPE_CHECKING:
    from pathlib import Path

Signer = Callable[[str, str, dict[str, str], bytes | None], dict[str, str]]
_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class SigningError(Exception):
    """No credentials to sign with; the message says where they were looked for."""


def is_loopback(api_url: str) -> bool:
    return (urlsplit(api_url).hostname or "") in LOOPBACK_HOSTS


def region_of(api_url: str) -> str | None:
    """The region in an execute-api URL (https://abc123.execute-api.eu-west-1.amazonaws.com/v1)."""
    matched = _EXECUTE_API_HOST.match(urlsplit(api_url).hostname or "")
    return matched["region"] if matched else None


def request_signer(api_url: str, profile: str | None, local_profiles: Path | None = None) -> Signer:
    """`local_profiles`: where the `serve` at `api_url` wrote its principals' profiles (default:
    that instance's directory under the local credentials directory)."""
    # botocore only once a request is sent: `agentledger --help` and parsing stay light.
    from botocore.auth import SigV4Auth  # noqa: PLC0415
    from botocore.awsrequest import AWSRequest  # noqa: PLC0415
    from botocore.exceptions import BotoCoreError  # noqa: PLC0415
    from botocore.session import Session  # noqa: PLC0415

    session = Session(profile=profile)
    local = is_loopback(api_url)
    if local and (local_profiles or not os.environ.get("AWS_SHARED_CREDENTIALS_FILE")):
        directory = local_profiles or instance_profiles_dir(api_url)
        if not (directory / "credentials").is_file():
            raise SigningError(f"no profiles for {api_url} in {directory}: `agentledger serve` writes them there "
                               "when it starts on that port")
        session.set_config_variable("credentials_file", str(directory / "credentials"))
        session.set_config_variable("config_file", str(directory / "config"))
    try:
        credentials = session.get_credentials()
        configured_region = session.get_config_variable("region")
    except BotoCoreError as error:
        raise SigningError(str(error)) from None
    if credentials is None:
        where = (session.get_config_variable("credentials_file") if local
                 else "--profile, AWS_PROFILE, the environment or ~/.aws")
        raise SigningError(f"no AWS credentials to sign the request with: looked in {where}")
    region = LOCAL_REGION if local else (region_of(api_url) or configured_region)
    if not region:
        raise SigningError(f"cannot tell the region of {api_url}; set AWS_REGION or the profile's region")

    def sign(method: str, url: str, headers: dict[str, str], body: bytes | None) -> dict[str, str]:
        request = AWSRequest(method=method, url=url, data=body or b"", headers=headers)
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", region).add_auth(request)
        return dict(request.headers.items())

    return sign
