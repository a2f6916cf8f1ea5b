"""SigV4 for requests sent with `requests`, through the signer the CLI uses (agentledger.cli.signing)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import requests

from agentledger.cli.signing import request_signer

if TYPE_CHECKING:
    from pathlib import Path


class SignedBy(requests.auth.AuthBase):
    """Signs each request as the caller `profile` names, the way the CLI signs its own."""

    def __init__(self, api_url: str, profile: str, profiles: Path) -> None:
        self._sign = request_signer(api_url, profile, profiles)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body.encode() if isinstance(request.body, str) else request.body
        request.headers.update(self._sign(request.method or "GET", request.url or "", dict(request.headers), body))
        return request
