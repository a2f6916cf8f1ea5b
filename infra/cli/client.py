"""A small HTTP client for the agentledger API: JSON in, JSON out, errors as exceptions that
carry a message a person can act on."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any

from .signing import Signer

REQUEST_TIMEOUT_S = 60.0


class ApiError(Exception):
    """The API answered with an error status; `message` is the body's explanation."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ApiUnreachable(Exception):
    def __init__(self, base_url: str) -> None:
        super().__init__(f"cannot reach the agentledger API at {base_url}; start it with `agentledger serve`")
        self.base_url = base_url


class ApiClient:
    def __init__(self, base_url: str, sign: Signer, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.sign = sign
        self.timeout_s = timeout_s

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        present = {name: value for name, value in (query or {}).items() if value is not None}
        suffix = f"?{urllib.parse.urlencode(present)}" if present else ""
        return self._send("GET", path + suffix, body=None, headers={})

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self._send("POST", path, body=body, headers=headers or {})

    def _send(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        url = self.base_url + path
        signed = self.sign(method, url, {"Content-Type": "application/json", "Accept": "application/json",
                                         **headers}, data)
        request = urllib.request.Request(url, data=data, method=method, headers=signed)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, _error_message(error)) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            raise ApiUnreachable(self.base_url) from error
        return json.loads(payload) if payload else None


def fetch(url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> bytes:
    """The bytes behind a presigned link."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, f"the artifact link answered HTTP {error.code}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise ApiUnreachable(url.split("?", 1)[0]) from error


def upload(grant: dict[str, Any], data: bytes, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
    """A browser-form POST of `data` under an upload grant (presigned: no SigV4 of our own)."""
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in grant["fields"].items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="repository.tar.gz"\r\n'
                 "Content-Type: application/gzip\r\n\r\n".encode() + data + f"\r\n--{boundary}--\r\n".encode())
    request = urllib.request.Request(grant["url"], data=b"".join(parts), method="POST",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, f"the upload was refused: {error.read().decode(errors='replace')[:300]}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise ApiUnreachable(grant["url"]) from error


def _error_message(error: urllib.error.HTTPError) -> str:
    raw = error.read().decode(errors="replace")
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {error.code} {error.reason}" + (f": {raw.strip()[:200]}" if raw.strip() else "")
