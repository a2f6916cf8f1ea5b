"""A small HTTP client for the agentledger API: JSON in, JSON out, errors as exceptions that
carry a message a person can act on."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

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
    def __init__(self, base_url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        present = {name: value for name, value in (query or {}).items() if value is not None}
        suffix = f"?{urllib.parse.urlencode(present)}" if present else ""
        return self._send("GET", path + suffix, body=None, headers={})

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self._send("POST", path, body=body, headers=headers or {})

    def _send(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", "Accept": "application/json",
                                                  **headers})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, _error_message(error)) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            raise ApiUnreachable(self.base_url) from error
        return json.loads(payload) if payload else None


def _error_message(error: urllib.error.HTTPError) -> str:
    raw = error.read().decode(errors="replace")
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {error.code} {error.reason}" + (f": {raw.strip()[:200]}" if raw.strip() else "")
